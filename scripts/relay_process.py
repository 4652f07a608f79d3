"""One `push-relay` process for the Python suites (scripts/conformance, scripts/provider-clients): started from
$TRIO_BIN_DIR (default .build/debug) on a free loopback port, its listeners read from the READY line, ended with
`stop()` (and with the test process, by --parent-pid)."""
import json
import os
import subprocess
from pathlib import Path

BIN = Path(os.environ.get("TRIO_BIN_DIR", Path(__file__).resolve().parents[1] / ".build" / "debug"))


class RelayProcess:
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

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
