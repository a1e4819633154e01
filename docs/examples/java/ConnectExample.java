// Connect Integration Service from Java 17, JDK only: `java ConnectExample.java` (no build, no
// dependencies). Pushes a batch of targets, polls its import job, receives and verifies the
// webhook the service sends when the job completes, and reads the event feed from a stored cursor.
//
//   CONNECT_BASE_URL        the service, e.g. http://127.0.0.1:8080
//   CONNECT_API_KEY         an API key with inbound.targets.batch.write, import_jobs.read, events.read
//   CONNECT_WEBHOOK_SECRET  the whsec_... of an endpoint registered for import_job.completed that
//                           points at http://<this machine>:CONNECT_WEBHOOK_PORT/ (optional)
//   CONNECT_WEBHOOK_PORT    where the receiver listens (default 9999)
//   CONNECT_CURSOR_FILE     where the feed's cursor is kept between runs (default connect-events.cursor)
//   CONNECT_TIMEOUT         seconds to wait for the job and for the webhook (default 60)
//
// The JDK has no JSON parser: this example reads the few fields it needs with regular
// expressions (json()). A real adapter uses Jackson or Gson and maps the OpenAPI schemas.

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.*;
import java.util.concurrent.*;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class ConnectExample {
  static final String BASE_URL = System.getenv().getOrDefault("CONNECT_BASE_URL", "http://127.0.0.1:8080");
  static final String API_KEY = System.getenv("CONNECT_API_KEY");
  static final long TIMEOUT_MS = (long) (Double.parseDouble(System.getenv().getOrDefault("CONNECT_TIMEOUT", "60")) * 1000);
  static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  /** The first value of a top-level-ish field in a JSON text: "name": "string" | number | bool. */
  static String json(String text, String field) {
    var m = Pattern.compile("\"" + field + "\"\\s*:\\s*(\"([^\"]*)\"|[^,}\\]\\s]+)").matcher(text);
    return !m.find() ? null : m.group(2) != null ? m.group(2) : m.group(1);
  }

  // 1. Requests, retried on 429 and 503 after Retry-After ------------------------------------
  static String call(String method, String path, String body, String... headers) throws Exception {
    for (int attempt = 1; ; attempt++) {
      var request = HttpRequest.newBuilder(URI.create(BASE_URL + path)).timeout(Duration.ofSeconds(30))
          .header("Authorization", "Bearer " + API_KEY).header("Content-Type", "application/json")
          .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
      if (headers.length > 0) request.headers(headers);
      var response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
      int status = response.statusCode();
      if (status < 300) return response.body();
      if ((status != 429 && status != 503) || attempt == 8) throw new RuntimeException(method + " " + path + ": " + status + " " + response.body());
      var retryAfter = response.headers().firstValue("Retry-After").orElse("");
      long wait = retryAfter.matches("\\d+") ? Long.parseLong(retryAfter) : 1L << attempt; // seconds; else back off
      System.out.println(method + " " + path + ": " + status + ", retrying after " + wait + " s");
      Thread.sleep(wait * 1000);
    }
  }

  static String pushBatch(String targetsJson, String sourceSystem, String batchId) throws Exception {
    // The key makes a retry (or a rerun after a crash, if you store the key with the batch) safe:
    // the same key and the same body answer the same import job, never a second one.
    var key = sourceSystem + "-" + batchId + "-" + UUID.randomUUID();
    var body = String.format("{\"sourceSystem\":\"%s\",\"externalBatchId\":\"%s\",\"targets\":%s}", sourceSystem, batchId, targetsJson);
    var job = call("POST", "/api/v1/inbound/targets/batch", body, "Idempotency-Key", key);
    System.out.println("pushed: import job " + json(job, "importJobId") + " " + json(job, "status") + " (Idempotency-Key " + key + ")");
    return json(job, "importJobId");
  }

  // 2. Polling the import job until it is final -----------------------------------------------
  static void waitForJob(String jobId) throws Exception {
    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
    while (true) {
      var job = call("GET", "/api/v1/import-jobs/" + jobId, null);
      var status = json(job, "status");
      if (List.of("Completed", "CompletedWithErrors", "Failed").contains(status)) {
        var counts = new StringJoiner(" ");
        for (var k : List.of("received", "accepted", "rejected", "applied", "failed")) counts.add(k + "=" + json(job, k));
        System.out.println("import job " + jobId + ": " + status + " " + counts);
        return;
      }
      if (System.currentTimeMillis() > deadline) throw new RuntimeException("import job " + jobId + " still " + status);
      Thread.sleep(500);
    }
  }

  // 3. Webhooks: Standard Webhooks signature, and a receiver ----------------------------------
  /** True when one of the webhook-signature values is the HMAC of id.timestamp.body. */
  static boolean verify(String secret, String id, String timestamp, String signatures, byte[] rawBody) throws Exception {
    if (id == null || timestamp == null || signatures == null || !timestamp.matches("\\d{1,12}")) return false;
    if (Math.abs(System.currentTimeMillis() / 1000 - Long.parseLong(timestamp)) > 300) return false; // a replayed capture
    var mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.replaceFirst("^whsec_", "")), "HmacSHA256"));
    mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
    byte[] expected = mac.doFinal(rawBody);
    // Several space-separated "v1,<base64>" values during a secret rotation: any one will do.
    for (var s : signatures.split(" ")) {
      if (!s.startsWith("v1,")) continue;
      try {
        if (MessageDigest.isEqual(expected, Base64.getDecoder().decode(s.substring(3)))) return true;
      } catch (IllegalArgumentException notBase64) { /* not ours */ }
    }
    return false;
  }

  /** Receives webhooks on the port; the bodies of verified ones go into the queue returned. */
  static BlockingQueue<String> startReceiver(String secret, int port) throws Exception {
    var received = new LinkedBlockingQueue<String>();
    var server = HttpServer.create(new InetSocketAddress(port), 0);
    server.createContext("/", exchange -> {
      byte[] raw = exchange.getRequestBody().readAllBytes(); // verify the raw bytes
      var h = exchange.getRequestHeaders();
      boolean ok;
      try {
        ok = verify(secret, h.getFirst("webhook-id"), h.getFirst("webhook-timestamp"), h.getFirst("webhook-signature"), raw);
      } catch (Exception e) {
        ok = false;
      }
      exchange.sendResponseHeaders(ok ? 204 : 401, -1);
      exchange.close();
      if (ok) received.add(new String(raw, StandardCharsets.UTF_8)); // deduplicate on "id": at least once
      else System.out.println("webhook " + h.getFirst("webhook-id") + ": signature not valid, refused");
    });
    server.setExecutor(Executors.newCachedThreadPool(r -> { var t = new Thread(r); t.setDaemon(true); return t; }));
    server.start();
    System.out.println("webhooks: listening on port " + port);
    return received;
  }

  static void waitForWebhook(BlockingQueue<String> received, String jobId) throws Exception {
    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
    String event;
    while ((event = received.poll(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS)) != null) {
      if (json(event, "type").startsWith("import_job.") && jobId.equals(json(event, "importJobId"))) {
        System.out.println("webhook " + json(event, "id") + " " + json(event, "type") + ": signature verified");
        return;
      }
    }
    throw new RuntimeException("no webhook for import job " + jobId);
  }

  // 4. The event feed, read from a stored cursor ----------------------------------------------
  static final Pattern EVENT = Pattern.compile("\"id\"\\s*:\\s*\"(evt_[^\"]+)\"\\s*,\\s*\"type\"\\s*:\\s*\"([^\"]+)\"");

  /** Reads every event after the stored cursor, storing the cursor after each page; the pages' JSON texts. */
  static List<String> readFeed(Path cursorFile) throws Exception {
    var after = Files.exists(cursorFile) ? Files.readString(cursorFile).trim() : null;
    var pages = new ArrayList<String>();
    int count = 0;
    while (true) {
      var page = call("GET", "/api/v1/events?limit=100" + (after != null ? "&after=" + after : ""), null);
      for (var m = EVENT.matcher(page); m.find(); count++) {
        System.out.println("feed: " + m.group(1) + " " + m.group(2)); // process it (idempotently)
      }
      pages.add(page);
      after = json(page, "next");
      Files.writeString(cursorFile, after); // after a crash, at most this page comes again: deduplicate on "id"
      if (!"true".equals(json(page, "hasMore"))) {
        System.out.println("feed: " + count + " events, next " + after + " stored in " + cursorFile);
        return pages;
      }
    }
  }

  public static void main(String[] args) {
    try {
      run();
      System.exit(0); // the receiver's threads would keep the JVM running
    } catch (Exception e) {
      System.err.println(e);
      System.exit(1);
    }
  }

  static void run() throws Exception {
    var secret = System.getenv("CONNECT_WEBHOOK_SECRET");
    var received = secret == null ? null : startReceiver(secret, Integer.parseInt(System.getenv().getOrDefault("CONNECT_WEBHOOK_PORT", "9999")));
    var targets = """
        [{"externalId": "SITE-1", "name": "Boiler room", "coordinates": {"latitude": 52.5321, "longitude": 13.3849}},
         {"externalId": "SITE-2", "name": "Roof unit", "coordinates": {"latitude": 52.5502, "longitude": 13.4101}},
         {"externalId": "SITE-3", "name": "Basement meter",
          "address": {"line1": "Hauptstraße 14", "city": "Berlin", "countryCode": "DE"}}]""";
    var batchId = LocalDateTime.now().format(DateTimeFormatter.ofPattern("'BATCH-'yyyyMMdd-HHmmss"));
    var jobId = pushBatch(targets, "java-example", batchId);
    waitForJob(jobId);
    if (received != null) waitForWebhook(received, jobId);
    var pages = readFeed(Path.of(System.getenv().getOrDefault("CONNECT_CURSOR_FILE", "connect-events.cursor")));
    if (pages.stream().noneMatch(page -> page.matches("(?s).*\"importJobId\"\\s*:\\s*" + jobId + "\\b.*")))
      throw new RuntimeException("the feed had no event for import job " + jobId);
  }
}
