#!/usr/bin/env python3
"""Connect Integration Service from Python, standard library only (python3 >= 3.8).

Pushes a batch of targets, polls its import job, receives and verifies the webhook the service
sends when the job completes, and reads the event feed from a stored cursor. Configuration:

  CONNECT_BASE_URL        the service, e.g. http://127.0.0.1:8080
  CONNECT_API_KEY         an API key with inbound.targets.batch.write, import_jobs.read, events.read
  CONNECT_WEBHOOK_SECRET  the whsec_... of an endpoint registered for import_job.completed that
                          points at http://<this machine>:CONNECT_WEBHOOK_PORT/ (optional)
  CONNECT_WEBHOOK_PORT    where the receiver listens (default 9999)
  CONNECT_CURSOR_FILE     where the feed's cursor is kept between runs (default connect-events.cursor)
  CONNECT_TIMEOUT         seconds to wait for the job and for the webhook (default 60)
"""
import base64, hashlib, hmac, json, os, queue, sys, threading, time, uuid
import urllib.error, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BASE_URL = os.environ.get("CONNECT_BASE_URL", "http://127.0.0.1:8080").rstrip("/")
API_KEY = os.environ["CONNECT_API_KEY"]
TIMEOUT = float(os.environ.get("CONNECT_TIMEOUT", "60"))


# 1. Requests, retried on 429 and 503 after Retry-After ------------------------------------
def call(method, path, body=None, headers=None, attempts=8):
    """One API call; its JSON answer. 429/503 are retried after the Retry-After they carry."""
    data = None if body is None else json.dumps(body).encode()  # the same bytes on every retry
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(BASE_URL + path, data=data, method=method, headers={
            "Authorization": "Bearer " + API_KEY, "Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code not in (429, 503) or attempt == attempts:
                raise SystemExit(f"{method} {path}: {error.code} {error.read().decode()}")
            wait = error.headers.get("Retry-After", "")
            wait = int(wait) if wait.isdigit() else 2 ** attempt  # seconds; else back off
            print(f"{method} {path}: {error.code}, retrying after {wait} s", flush=True)
            time.sleep(wait)


def push_batch(targets, source_system, batch_id):
    # The key makes a retry (or a rerun after a crash, if you store the key with the batch) safe:
    # the same key and the same body answer the same import job, never a second one.
    key = f"{source_system}-{batch_id}-{uuid.uuid4()}"
    body = {"sourceSystem": source_system, "externalBatchId": batch_id, "targets": targets}
    job = call("POST", "/api/v1/inbound/targets/batch", body, {"Idempotency-Key": key})
    print(f"pushed: import job {job['importJobId']} {job['status']} (Idempotency-Key {key})", flush=True)
    return job


# 2. Polling the import job until it is final -----------------------------------------------
FINAL = ("Completed", "CompletedWithErrors", "Failed")


def wait_for_job(job_id):
    deadline = time.monotonic() + TIMEOUT
    while True:
        job = call("GET", f"/api/v1/import-jobs/{job_id}")
        if job["status"] in FINAL:
            counts = " ".join(f"{k}={v}" for k, v in job["counts"].items())
            print(f"import job {job_id}: {job['status']} {counts}", flush=True)
            return job
        if time.monotonic() > deadline:
            raise SystemExit(f"import job {job_id} still {job['status']} after {TIMEOUT} s")
        time.sleep(0.5)


# 3. Webhooks: Standard Webhooks signature, and a receiver ----------------------------------
def verify(secret, headers, raw_body, tolerance=300):
    """True when one of the webhook-signature values is the HMAC of id.timestamp.body."""
    msg_id, timestamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance:
        return False  # too old or from the future: a replayed capture
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    signed = f"{msg_id}.{timestamp}.".encode() + raw_body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    # Several space-separated "v1,<base64>" values during a secret rotation: any one will do.
    return any(hmac.compare_digest(s.partition(",")[2], expected)
               for s in headers.get("webhook-signature", "").split() if s.startswith("v1,"))


def start_receiver(secret, port):
    """Receives webhooks on the port; verified events go into the queue returned."""
    received = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))  # verify the raw bytes
            ok = verify(secret, {k.lower(): v for k, v in self.headers.items()}, raw)
            self.send_response(204 if ok else 401)
            self.end_headers()
            if ok:
                received.put(json.loads(raw))  # deduplicate on its "id" (= webhook-id): at least once
            else:
                print(f"webhook {self.headers.get('webhook-id')}: signature not valid, refused", flush=True)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"webhooks: listening on port {port}", flush=True)
    return received


def wait_for_webhook(received, job_id):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            event = received.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if event["type"].startswith("import_job.") and event["data"]["importJobId"] == job_id:
            print(f"webhook {event['id']} {event['type']}: signature verified", flush=True)
            return event
    raise SystemExit(f"no webhook for import job {job_id} within {TIMEOUT} s")


# 4. The event feed, read from a stored cursor ----------------------------------------------
def read_feed(cursor_file):
    """Every event after the stored cursor; the cursor is stored after each page is processed."""
    after = open(cursor_file).read().strip() if os.path.exists(cursor_file) else None
    seen = []
    while True:
        page = call("GET", "/api/v1/events?limit=100" + (f"&after={after}" if after else ""))
        for event in page["events"]:
            print(f"feed: {event['id']} {event['type']}", flush=True)  # process it (idempotently)
            seen.append(event)
        after = page["next"]
        with open(cursor_file, "w") as f:
            f.write(after)  # after a crash, at most this page comes again: deduplicate on "id"
        if not page["hasMore"]:
            print(f"feed: {len(seen)} events, next {after} stored in {cursor_file}", flush=True)
            return seen


def main():
    secret = os.environ.get("CONNECT_WEBHOOK_SECRET")
    received = start_receiver(secret, int(os.environ.get("CONNECT_WEBHOOK_PORT", "9999"))) if secret else None
    targets = [
        {"externalId": "SITE-1", "name": "Boiler room", "coordinates": {"latitude": 52.5321, "longitude": 13.3849}},
        {"externalId": "SITE-2", "name": "Roof unit", "coordinates": {"latitude": 52.5502, "longitude": 13.4101}},
        {"externalId": "SITE-3", "name": "Basement meter",
         "address": {"line1": "Hauptstraße 14", "city": "Berlin", "countryCode": "DE"}},
    ]
    job = push_batch(targets, "python-example", time.strftime("BATCH-%Y%m%d-%H%M%S"))
    wait_for_job(job["importJobId"])
    if received:
        wait_for_webhook(received, job["importJobId"])
    events = read_feed(os.environ.get("CONNECT_CURSOR_FILE", "connect-events.cursor"))
    if not any(e["type"].startswith("import_job.") and e["data"]["importJobId"] == job["importJobId"] for e in events):
        sys.exit(f"the feed had no event for import job {job['importJobId']}")


if __name__ == "__main__":
    main()
