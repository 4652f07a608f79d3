#!/usr/bin/env python3
"""A stand-in for a Beiwe server the trio did not make: /register_user (and /ios) answer 200 after DELAY_MS, every other
path (the trio's /__admin included) answers 404 with an HTML page, as the real server does for routes it lacks.

    standin-server.py DELAY_MS      prints `READY {"url": "http://127.0.0.1:PORT"}` once listening; stops on SIGTERM
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = int(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0


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
        self.rfile.read(length)
        if self.path.rstrip("/") in ("/register_user", "/register_user/ios"):
            time.sleep(DELAY)
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
