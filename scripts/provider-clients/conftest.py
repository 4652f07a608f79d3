"""Fixtures for driving the push relay with real provider client libraries (scripts/apitest runs this suite).

`relay` starts a `push-relay` (from $TRIO_BIN_DIR, default .build/debug) on a free loopback port, lenient unless a
test asks for `strict_relay`. `Device` registers a token and reads its event stream, as the SDK does.
"""
import http.client
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

BIN = Path(os.environ.get("TRIO_BIN_DIR", Path(__file__).resolve().parents[2] / ".build" / "debug"))


class Relay:
    def __init__(self, *arguments):
        self.process = subprocess.Popen([str(BIN / "push-relay"), "--port", "0", "--parent-pid", str(os.getpid()), *arguments],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.process.stdout.readline().decode()
        assert line.startswith("READY "), f"push-relay did not start: {line!r}"
        ready = json.loads(line.split(" ", 1)[1])
        self.url = ready["url"]
        self.port = int(self.url.rsplit(":", 1)[1])
        # The provider API over TLS with HTTP/2 (APNs' transport), and the CA its certificate comes from.
        self.tls_url = ready.get("tls_url")

    def call(self, method, path, body=None, headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = None if body is None else json.dumps(body)
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        text = response.read()
        connection.close()
        return response.status, (json.loads(text) if text else None)

    def delivered(self, token):
        """How many pushes the relay has written to `token`'s stream (its control API's count)."""
        status, view = self.call("GET", f"/__control/devices/{token}")
        assert status == 200, view
        return view["delivered"]

    def service_account(self, project):
        with urllib.request.urlopen(f"{self.url}/__control/fcm/service-account.json?project_id={project}") as response:
            return json.load(response)

    def ca_file(self, directory):
        """The relay's CA (PEM), written to a file in `directory`."""
        path = Path(directory) / "relay-ca.pem"
        with urllib.request.urlopen(f"{self.url}/__control/tls/ca.pem") as response:
            path.write_bytes(response.read())
        return str(path)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=5)


class Device:
    """A device token and its open event stream."""

    def __init__(self, relay, platform):
        status, body = relay.call("POST", "/v1/devices", {"platform": platform, "app_id": "org.example.app"})
        assert status == 201, body
        self.token = body["token"]
        self.connection = http.client.HTTPConnection("127.0.0.1", relay.port, timeout=10)
        self.connection.request("GET", f"/v1/devices/{self.token}/stream", headers={"Accept": "text/event-stream"})
        self.stream = self.connection.getresponse()
        assert self.stream.status == 200
        assert self.stream.readline().startswith(b": connected")
        self.stream.readline()

    def next_push(self, timeout=5):
        """The next pushed message (`id`, `payload`, `push_type`, ...), skipping keepalives; None after `timeout` (the
        stream cannot be read after that: to check that nothing came, ask the relay, `Relay.delivered`)."""
        self.connection.sock.settimeout(timeout)
        event = {}
        try:
            while True:
                line = self.stream.readline().decode().rstrip("\n")
                if line.startswith("event:"):
                    event["event"] = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    event["data"] = json.loads(line.split(":", 1)[1])
                elif line == "" and "data" in event:
                    if event.get("event") == "push":
                        return event["data"]
                    event = {}
        except (TimeoutError, OSError):
            return None

    def close(self):
        self.connection.close()


@pytest.fixture
def relay():
    started = Relay()
    yield started
    started.stop()


@pytest.fixture
def strict_relay():
    started = Relay("--provider-auth", "strict")
    yield started
    started.stop()
