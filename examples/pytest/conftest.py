"""A pytest fixture that runs the trio for a test session, written only from the repository's docs.

`survey-cli up --parent-pid` starts mock-server and push-relay and prints one READY line with both URLs; with
`--parent-pid` they all stop when pytest is gone, however it ends (kill -9 included). The binaries are found in
$TRIO_BIN_DIR, else on PATH (unpack the release archive and put its bin/ there).
"""
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
EVENT_SCHEMA = Draft202012Validator(json.loads((DOCS / "device-event.schema.json").read_text()))
STATUS_SCHEMA = Draft202012Validator(json.loads((DOCS / "device-status.schema.json").read_text()))


def checked_events(text):
    """The JSON lines a device command printed, each validated against docs/schemas/device-event.schema.json."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        EVENT_SCHEMA.validate(line)
    return lines


def binary(name):
    directory = os.environ.get("TRIO_BIN_DIR")
    path = Path(directory) / name if directory else shutil.which(name)
    if not path or not Path(path).exists():
        raise RuntimeError(f"cannot find {name}: set TRIO_BIN_DIR or put the trio's bin directory on PATH")
    return str(path)


class API:
    """JSON over HTTP (the admin API of docs/openapi/mock-server.json, the control API of push-relay.json)."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if data is not None else {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, (json.loads(text) if text else None)

    def get(self, path):
        return self.call("GET", path)

    def post(self, path, body=None):
        return self.call("POST", path, {} if body is None else body)


class Trio:
    def __init__(self, server, relay, directory, devices=None):
        self.server_url = server
        self.relay_url = relay
        self.admin = API(server + "/__admin")
        self.control = API(relay + "/__control")
        # The devices API (`survey-cli devices serve`, which `up` starts): devices created and driven over HTTP.
        self.devices = API(devices + "/__devices") if devices else None
        self.directory = directory

    def device(self, name, *args, timeout=60):
        """Runs `survey-cli device NAME ...` and returns its JSON lines (docs/cli.md); fails on a non-zero exit."""
        result = subprocess.run([binary("survey-cli"), "device", name, *args], capture_output=True, text=True, timeout=timeout)
        lines = checked_events(result.stdout)
        assert result.returncode == 0, f"device {name} exited {result.returncode}: {result.stdout}{result.stderr}"
        return lines


@pytest.fixture(scope="session")
def trio(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trio")
    process = subprocess.Popen([binary("survey-cli"), "up", "--data-dir", str(directory), "--database", ":memory:",
                                "--parent-pid", str(os.getpid())],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError("survey-cli up did not start: " + line + process.stderr.read())
    ready = json.loads(line[len("READY "):])
    yield Trio(ready["mock_server"], ready["push_relay"], directory, ready.get("devices"))
    process.terminate()
    process.wait(timeout=10)
