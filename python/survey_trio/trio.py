"""Clients of the trio's HTTP APIs (docs/openapi) and the process that runs the trio (`survey-cli up`)."""
import contextlib
import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


class TrioError(RuntimeError):
    """The trio could not start, or a call was refused where the caller expected success."""


def binary(name, bin_dir=None):
    """The path of a trio executable: in `bin_dir`, `$TRIO_BIN_DIR`, or on PATH."""
    directory = bin_dir or os.environ.get("TRIO_BIN_DIR")
    path = Path(directory) / name if directory else shutil.which(name)
    if not path or not Path(path).exists():
        raise TrioError(f"cannot find {name}: pass --trio-bin-dir, set TRIO_BIN_DIR, or put the trio's bin directory on PATH")
    return str(path)


class API:
    """JSON over HTTP under one base URL: `(status, body)` from every call, never an exception for a status."""

    def __init__(self, base, timeout=75, token=None):
        self.base = base
        self.timeout = timeout
        self.token = token

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, (json.loads(text) if text else None)
            except ValueError:
                return error.code, text.decode(errors="replace")

    def get(self, path):
        return self.call("GET", path)

    def post(self, path, body=None):
        return self.call("POST", path, {} if body is None else body)

    def put(self, path, body):
        return self.call("PUT", path, body)

    def delete(self, path):
        return self.call("DELETE", path)

    def ok(self, method, path, body=None):
        """The body of a 2xx answer; `TrioError` with the error body otherwise."""
        status, answer = self.call(method, path, body)
        if not 200 <= status < 300:
            raise TrioError(f"{method} {self.base}{path} answered {status}: {answer}")
        return answer

    def wait_for(self, path, count=1, within="10s", allow_short=False, **query):
        """A listing (push log, submissions, occurrences, telemetry, journals, trace) once it holds `count` items: the
        server waits (`min_count`, `wait`), the test does not sleep. When `within` is over with fewer, `TrioError` names
        what there was (as `Devices.wait_for` does); `allow_short=True` returns the short list instead."""
        query.update({"min_count": count, "wait": within})
        separator = "&" if "?" in path else "?"
        answer = self.ok("GET", path + separator + urllib.parse.urlencode(query))
        items = answer["requests"] if isinstance(answer, dict) and "requests" in answer else answer
        if len(items) < count and not allow_short:
            raise TrioError(f"{self.base}{path}: {len(items)} of {count} items within {within}; saw {items!r:.500}")
        return items


class Devices(API):
    """The devices API (`survey-cli devices serve`, docs/openapi/survey-devices.json): SDK devices in one process."""

    def create(self, patient_id, password, timezone="UTC", **fields):
        """Registers a device and starts it listening; its status (with `device_id`). `TrioError` when refused."""
        return self.ok("POST", "", {"patient_id": patient_id, "password": password, "timezone": timezone, **fields})

    def status(self, device_id):
        """What a device holds (docs/schemas/device-status.schema.json) with its id, participant, platform and state."""
        return self.ok("GET", f"/{device_id}")

    def all(self):
        """Every device's status, oldest first."""
        return self.ok("GET", "")

    def events(self, device_id, after=0, until=None, within="0s"):
        """`{"events": [...], "next": seq}`: the events after `after`, waiting up to `within` for one (or for `until`)."""
        query = {"after": after, "wait": within}
        if until:
            query["until"] = until
        return self.ok("GET", f"/{device_id}/events?" + urllib.parse.urlencode(query))

    def wait_for(self, device_id, event, within="30s", after=0):
        """The events up to the first `event` after `after`; `TrioError` when it did not come within `within`."""
        page = self.events(device_id, after=after, until=event, within=within)
        if not page["events"] or page["events"][-1]["event"] != event:
            raise TrioError(f"device {device_id}: no {event} within {within}; saw {[e['event'] for e in page['events']]}")
        return page["events"]

    def answer(self, device_id, survey_id, answers):
        """Answers a stored survey; returns once the server took the upload."""
        return self.ok("POST", f"/{device_id}/answers", {"survey_id": survey_id, "answers": answers})

    def stop(self, device_id):
        """Stops a device (its directory kept); a stop during a start waits for it. Its status."""
        return self.ok("POST", f"/{device_id}/stop")

    def start(self, device_id):
        """Starts a stopped device again. Its status."""
        return self.ok("POST", f"/{device_id}/start")

    def remove(self, device_id):
        """Stops a device and deletes its directory; a wait on its events ends."""
        return self.ok("DELETE", f"/{device_id}")


class Trio:
    """A running trio: its URLs and clients (`admin` under /__admin, `control` under /__control, `devices`), which send
    `token` (the READY line's, when `survey-cli up` generated one) as `Authorization: Bearer`."""

    def __init__(self, ready, directory, bin_dir=None, token=None):
        self.ready = ready
        self.token = token or ready.get("token")
        self.server_url = ready["mock_server"]
        self.relay_url = ready["push_relay"]
        self.devices_url = ready.get("devices")
        self.tls_url = ready.get("tls_url")
        self.proxy_url = ready.get("push_relay_proxy")
        self.admin = API(self.server_url + "/__admin", token=self.token)
        self.control = API(self.relay_url + "/__control", token=self.token)
        self.devices = Devices(self.devices_url + "/__devices", token=self.token) if self.devices_url else None
        self.directory = Path(directory) if directory else None
        self.bin_dir = bin_dir

    def device(self, name, *args, timeout=60):
        """Runs `survey-cli device NAME ...` and returns its JSON lines; `TrioError` on a non-zero exit."""
        result = subprocess.run([binary("survey-cli", self.bin_dir), "device", name, *args], capture_output=True, text=True,
                                timeout=timeout)
        lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        if result.returncode != 0:
            raise TrioError(f"device {name} exited {result.returncode}: {result.stdout}{result.stderr}")
        return lines


@contextlib.contextmanager
def start(directory, database=":memory:", bin_dir=None, extra_args=()):
    """Runs `survey-cli up` in `directory` (tied to this process: a killed runner leaves nothing behind) and yields a
    `Trio`; stops it on exit."""
    process = subprocess.Popen([binary("survey-cli", bin_dir), "up", "--data-dir", str(directory), "--database", database,
                                "--parent-pid", str(os.getpid()), *extra_args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("READY "):
        process.kill()
        raise TrioError("survey-cli up did not start: " + line + process.stderr.read())
    try:
        yield Trio(json.loads(line[len("READY "):]), directory, bin_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
