"""A deterministic OpenAI-compatible streaming server for bench/peer_agreement.py: /v1/completions answers with
`max_tokens` chunks, the first after --ttft seconds, then one every --itl seconds, then a usage chunk without
choices (as vLLM's own server sends it) and [DONE]. Requests are served concurrently (one thread each), so what
the clients measure is set by this server, not by a model's speed. Usage: python bench/_fake_openai.py PORT"""
import argparse, http.server, json, time

ap = argparse.ArgumentParser(); ap.add_argument("port", type=int)
ap.add_argument("--ttft", type=float, default=0.05); ap.add_argument("--itl", type=float, default=0.02)
a = ap.parse_args()

class H(http.server.BaseHTTPRequestHandler):
    protocol_version, disable_nagle_algorithm = "HTTP/1.1", True
    def log_message(self, *x): pass
    def send(self, obj):
        data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data)); self.wfile.flush()
    def do_GET(self):
        body = b'{"object": "list", "data": [{"id": "model", "object": "model"}]}' if self.path.startswith("/v1/models") else b"{}"
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        n, t0 = int(req.get("max_tokens") or 16), time.perf_counter()
        self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(n):
            time.sleep(max(0.0, t0 + a.ttft + i * a.itl - time.perf_counter()))  # on a fixed schedule, drift-free
            self.send({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": " tok", "finish_reason": "length" if i == n - 1 else None}]})
        self.send({"id": "x", "object": "text_completion", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": n + 1}})
        self.send(b"[DONE]"); self.wfile.write(b"0\r\n\r\n"); self.wfile.flush()

http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", a.port), H).serve_forever()
