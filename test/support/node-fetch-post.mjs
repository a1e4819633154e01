/* global process, fetch, URL, console */
// Posts JSON bodies with Node's fetch (undici), one after another, as an integrator's script in
// its own process does. The bodies are given as [{ path, headers, field, bytes }]: each body is
// `{ [field]: "x" × bytes }`. Prints one JSON line per request: {"status": 413, "code":
// "payload_too_large"} when the answer was read, else {"error": "ECONNRESET"} (the cause's code).
//
//   node node-fetch-post.mjs BASE_URL REQUESTS_JSON
const [base, requestsJson] = process.argv.slice(2);
for (const { path, headers, field, bytes } of JSON.parse(requestsJson)) {
  try {
    const res = await fetch(new URL(path, base), {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ [field]: 'x'.repeat(bytes) }),
    });
    const text = await res.text();
    let code = null;
    try {
      code = JSON.parse(text).error?.code ?? null;
    } catch {
      // not JSON
    }
    console.log(JSON.stringify({ status: res.status, code }));
  } catch (err) {
    console.log(JSON.stringify({ error: err.cause?.code ?? err.name }));
  }
}
