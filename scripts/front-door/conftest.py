"""Every listener of every process, read from the READY lines (scripts/apitest runs this suite).

`fleet` starts each process the project ships, each with a control-plane token: mock-server, push-relay, `survey-cli
devices serve`, and `survey-cli up` (which starts its own three), once on loopback and once on every interface. Its `listeners` are every http:// and https:// URL
found anywhere in those READY lines: a listener added later, or a process that names one more URL, is covered without
a change here.
"""
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

BIN = Path(os.environ.get("TRIO_BIN_DIR", Path(__file__).resolve().parents[2] / ".build" / "debug"))
TOKEN = "front-door-token"


def launch(arguments):
    process = subprocess.Popen([str(BIN / arguments[0]), *arguments[1:], "--parent-pid", str(os.getpid())],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = process.stdout.readline().decode()
    assert line.startswith("READY "), f"{arguments[0]} did not start: {line!r}"
    return process, json.loads(line.split(" ", 1)[1])


def urls(value, key=""):
    """Every http(s) URL in a READY line's values, however nested, with the key that named it."""
    if isinstance(value, str):
        return [(key, value)] if value.startswith(("http://", "https://")) else []
    if isinstance(value, list):
        return [found for item in value for found in urls(item, key)]
    if isinstance(value, dict):
        return [found for name, item in value.items() for found in urls(item, name)]
    return []


class Fleet:
    def __init__(self):
        self.processes = []
        self.ready = []
        relay, relay_ready = launch(["push-relay", "--control-token", TOKEN])
        self.add(relay, relay_ready)
        self.add(*launch(["mock-server", "--database", ":memory:", "--relay-url", relay_ready["url"], "--admin-token", TOKEN]))
        directory = tempfile.mkdtemp(prefix="front-door-")
        self.add(*launch(["survey-cli", "devices", "serve", "--server", self.ready[1]["url"], "--relay", relay_ready["url"],
                          "--data-dir", directory + "/devices", "--token", TOKEN]))
        self.add(*launch(["survey-cli", "up", "--data-dir", directory + "/up", "--database", ":memory:", "--token", TOKEN]))
        # `up` bound to every interface (the container image's form): its listeners are other URLs in its READY line.
        self.add(*launch(["survey-cli", "up", "--host", "0.0.0.0", "--data-dir", directory + "/up-all", "--database", ":memory:",
                          "--token", TOKEN]))
        seen = []
        # A proxy listener (its READY key names it: `proxy_url`, `push_relay_proxy`) speaks CONNECT first.
        self.proxies = set()
        for ready in self.ready:
            for key, url in urls(ready):
                if url not in seen:
                    seen.append(url)
                if "proxy" in key:
                    self.proxies.add(url)
        self.listeners = seen

    def add(self, process, ready):
        self.processes.append(process)
        self.ready.append(ready)

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)


@pytest.fixture(scope="session")
def fleet():
    started = Fleet()
    yield started
    started.stop()
