"""The services' documented tables, row by row, against a live relay (scripts/apitest runs this suite).

The rows come from `push-relay --conformance` (the tables the relay's routes answer by); every row must have a case
here (`CASES` in each test module), and each case makes the relay answer that row, or shows the documented
difference. `generate.py` renders docs/CONFORMANCE.md from the same tables.
"""
import http.client
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from relay_process import BIN, RelayProcess  # noqa: E402


def tables():
    return json.loads(subprocess.run([str(BIN / "push-relay"), "--conformance"], capture_output=True, check=True, text=True).stdout)


class Relay(RelayProcess):
    def request(self, method, path, body=None, headers=(), raw=None):
        """(status, parsed JSON or None, headers) of one HTTP/1.1 request; `headers` is a list (a name may repeat)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        connection.putrequest(method, path, skip_accept_encoding=True)
        sent = {name.lower() for name, _ in headers}
        if "content-type" not in sent and data is not None:
            connection.putheader("Content-Type", "application/json")
        for name, value in headers:
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(data or b"")))
        connection.endheaders(data)
        response = connection.getresponse()
        text = response.read()
        connection.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return response.status, parsed, dict(response.getheaders())

    def call(self, method, path, body=None):
        status, parsed, _ = self.request(method, path, body)
        return status, parsed

    def device(self, platform="ios", app_id="org.example.app"):
        status, body = self.call("POST", "/v1/devices", {"platform": platform, "app_id": app_id})
        assert status == 201, body
        return body["token"]

    def advance(self, seconds):
        assert self.call("POST", "/__control/clock", {"advance_seconds": seconds})[0] == 200


@pytest.fixture
def relay():
    started = Relay("--provider-auth", "strict")
    yield started
    started.stop()


@pytest.fixture
def limited_relay():
    started = Relay("--device-rate", "1")
    yield started
    started.stop()


def check_every_row_has_a_case(rows, cases, table):
    names = [row["name"] for row in rows]
    missing = [name for name in names if name not in cases]
    extra = [name for name in cases if name not in names]
    assert not missing and not extra, f"{table}: rows without a case {missing}, cases without a row {extra}"
