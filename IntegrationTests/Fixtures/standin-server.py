#!/usr/bin/env python3
"""A stand-in for a Beiwe server the trio did not make: /register_user (and /ios) answer 200 after DELAY_MS, every other
path (the trio's /__admin included) answers 404 with an HTML page, as the real server does for routes it lacks.

    standin-server.py DELAY_MS [--require-header 'Name: value'] [--html-200] [--record FILE]
        prints `READY {"url": "http://127.0.0.1:PORT"}` once listening; stops on SIGTERM.
        --require-header: a registration without that header answers 401 (a gateway in front of the server);
        --html-200: a registration answers 200 with an HTML page (a gateway's login page, not the route's JSON);
        --record: every registration's form (its fields, with the headers named by --require-header) is appended to FILE
        as a JSON line.
"""
import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = int(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0
ARGS = sys.argv[2:]
REQUIRED = ARGS[ARGS.index("--require-header") + 1].split(":", 1) if "--require-header" in ARGS else None
HTML_200 = "--html-200" in ARGS
RECORD = ARGS[ARGS.index("--record") + 1] if "--record" in ARGS else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body, content_type):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path.rstrip("/") in ("/register_user", "/register_user/ios"):
            if REQUIRED and self.headers.get(REQUIRED[0].strip()) != REQUIRED[1].strip():
                self.reply(401, "<h1>Unauthorized</h1>", "text/html; charset=utf-8")
                return
            if RECORD:
                fields = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}
                with open(RECORD, "a") as out:
                    out.write(json.dumps(fields) + "\n")
            time.sleep(DELAY)
            if HTML_200:
                self.reply(200, "<html><body>Please sign in</body></html>", "text/html; charset=utf-8")
                return
            self.reply(200, json.dumps({"client_public_key": "MIIB", "device_settings": {}, "ios_plist": None,
                                        "android_firebase_json": None, "study_name": "stand-in", "study_id": "x"}),
                       "text/html; charset=utf-8")
        else:
            self.reply(404, "<h1>Not Found</h1>", "text/html; charset=utf-8")

    def do_GET(self):
        self.reply(404, "<h1>Not Found</h1>", "text/html; charset=utf-8")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("READY " + json.dumps({"service": "standin-server", "url": f"http://127.0.0.1:{server.server_address[1]}", "pid": 0}), flush=True)
server.serve_forever()
