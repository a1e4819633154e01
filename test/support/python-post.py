# Posts one body several times with Python's standard-library HTTP client, as an integrator's
# script (or `requests`, which sits on it) does: the whole body is written before the answer is
# read, with Content-Length and no `Expect: 100-continue`. Prints one JSON line per attempt:
# {"status": 413, "code": "payload_too_large"} when the answer was read, else {"error": "BrokenPipeError"}.
#
#   python3 python-post.py URL BODY_BYTES ATTEMPTS [HEADER_JSON]
import http.client
import json
import sys
import urllib.parse

url = urllib.parse.urlsplit(sys.argv[1])
body_bytes = int(sys.argv[2])
attempts = int(sys.argv[3])
headers = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
headers.setdefault("Content-Type", "application/json")
body = b" " * body_bytes

for _ in range(attempts):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        conn.request("POST", url.path, body=body, headers=headers)
        res = conn.getresponse()
        data = res.read()
        try:
            code = json.loads(data)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        print(json.dumps({"status": res.status, "code": code}), flush=True)
    except Exception as err:  # the failure an integrator would see
        print(json.dumps({"error": type(err).__name__}), flush=True)
    finally:
        conn.close()
