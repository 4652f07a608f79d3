"""Fixtures for driving the push relay with real provider client libraries (scripts/apitest runs this suite).

`relay` starts a `push-relay` (from $TRIO_BIN_DIR, default .build/debug) on a free loopback port, lenient unless a
test asks for `strict_relay`. `Device` registers a token and reads its event stream, as the SDK does.
"""
import http.client
import json
import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from relay_process import RelayProcess  # noqa: E402


class Relay(RelayProcess):
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
