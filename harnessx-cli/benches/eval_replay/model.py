# A loopback OpenAI-compatible model for the eval replay measurement: nine tool calls
# (list_directory), then an answer naming the prompt: ten turns a case.
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        msgs = body["messages"]
        tools = sum(1 for m in msgs if m["role"] == "tool")
        prompt = next(m["content"] for m in msgs if m["role"] == "user")
        if tools < 9:
            msg = {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{tools}", "type": "function",
                   "function": {"name": "list_directory", "arguments": "{\"path\": \".\"}"}}]}
        else:
            msg = {"role": "assistant", "content": f"Done: {prompt}"}
        out = json.dumps({"choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 50 * len(msgs), "completion_tokens": 10}}).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out))); self.end_headers(); self.wfile.write(out)

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
