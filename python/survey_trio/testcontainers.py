"""The trio from its container image, through testcontainers-python (`pip install "survey-trio[testcontainers]"`).

    from survey_trio.testcontainers import TrioContainer

    with TrioContainer("localhost/survey-trio:latest") as trio:
        study = trio.admin.ok("POST", "/studies", {"name": "S", "scheduling": "server"})

`trio` is a `survey_trio.Trio` with the same `admin`, `control` and `devices` clients as the pytest `trio` fixture, its
URLs those of the ports the container engine mapped. The image (`scripts/container build`, docs/CONTAINER.md) listens on
4001 (mock server), 4002 (relay), 4003 (devices API), 4080 (relay proxy) and 4443 (relay TLS), and takes its token from
`TRIO_TOKEN`: one is made here, so every client sends it.
"""
import json
import secrets
import time
import urllib.error
import urllib.request

from testcontainers.core.container import DockerContainer

from .trio import Trio, TrioError

# The image's fixed ports, by the READY line's name for each.
PORTS = {"mock_server": 4001, "push_relay": 4002, "devices": 4003, "push_relay_proxy": 4080, "tls_url": 4443}


class TrioContainer:
    """Runs the trio's image; a context manager yielding a `survey_trio.Trio` (`start()`/`stop()` without `with`).

    `image`: the image to run; `token`: the bearer token (default: a random one); `startup_timeout`: seconds to wait
    for the READY line; `labels`: container labels (a test suite can find and remove what it started by them)."""

    def __init__(self, image="localhost/survey-trio:latest", token=None, startup_timeout=60, labels=None):
        self.image = image
        self.token = token or secrets.token_hex(16)
        self.startup_timeout = startup_timeout
        self.container = DockerContainer(image).with_env("TRIO_TOKEN", self.token).with_exposed_ports(*PORTS.values())
        if labels:
            self.container = self.container.with_kwargs(labels=labels)
        self.trio = None
        self.ready_inside = None

    def start(self):
        """Starts the container, waits for its READY line and for the mapped ports to answer; the `Trio`."""
        self.container.start()
        try:
            self.ready_inside = self._wait_for_ready()
            host = self.container.get_container_host_ip()
            urls = {}
            for name, port in PORTS.items():
                scheme = "https" if name == "tls_url" else "http"
                urls[name] = f"{scheme}://{host}:{self.container.get_exposed_port(port)}"
            ready = {**self.ready_inside, **urls, "url": urls["mock_server"]}
            self.trio = Trio(ready, None, token=self.token)
            self._wait_for_health()
        except BaseException:
            self.container.stop()
            raise
        return self.trio

    def stop(self):
        """Stops and removes the container (SIGTERM; the image's `survey-cli up` stops its servers)."""
        self.container.stop()

    def logs(self):
        """What the container wrote: (stdout, stderr) as text."""
        out, err = self.container.get_logs()
        return out.decode(errors="replace"), err.decode(errors="replace")

    def _wait_for_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            out, _ = self.logs()
            for line in out.splitlines():
                if line.startswith("READY "):
                    return json.loads(line[len("READY "):])
            time.sleep(0.1)
        out, err = self.logs()
        raise TrioError(f"{self.image} printed no READY line within {self.startup_timeout} s: {out[-2000:]}{err[-2000:]}")

    def _wait_for_health(self):
        # The engine's port forwarding may lag the READY line by a moment.
        deadline = time.monotonic() + 15
        while True:
            try:
                status, _ = self.trio.admin.call("GET", "/health")
                if status == 200:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TrioError(f"{self.image}: the mock server did not answer on {self.trio.server_url}")
            time.sleep(0.1)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
