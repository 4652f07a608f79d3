"""Clients generated from docs/openapi with openapi-python-client, unchanged, against the trio.

The session generates `trio_admin` (mock-server.json) and `trio_relay` (push-relay.json) into a temporary directory,
failing on any generator warning (a schema the generator cannot read is a model missing from every user's client), and
starts `survey-cli up --parent-pid` (the processes stop with pytest). Binaries come from $TRIO_BIN_DIR.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def binary(name):
    directory = os.environ.get("TRIO_BIN_DIR")
    path = Path(directory) / name if directory else shutil.which(name)
    if not path or not Path(path).exists():
        raise RuntimeError(f"cannot find {name}: set TRIO_BIN_DIR or put the trio's bin directory on PATH")
    return str(path)


def generate(document, package, into):
    generator = shutil.which("openapi-python-client") or str(Path(sys.executable).parent / "openapi-python-client")
    result = subprocess.run([generator, "generate", "--path", str(ROOT / "docs/openapi" / document), "--meta", "none",
                             "--config", str(HERE / "config.yaml"), "--output-path", str(into / package)],
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Warning" not in output and "WARNING" not in output, f"openapi-python-client warned on {document}:\n{output}"


@pytest.fixture(scope="session")
def clients(tmp_path_factory):
    into = tmp_path_factory.mktemp("generated")
    generate("mock-server.json", "trio_admin", into)
    generate("push-relay.json", "trio_relay", into)
    sys.path.insert(0, str(into))
    import trio_admin
    import trio_relay
    return trio_admin, trio_relay


@pytest.fixture(scope="session")
def trio(tmp_path_factory, clients):
    directory = tmp_path_factory.mktemp("trio")
    process = subprocess.Popen([binary("survey-cli"), "up", "--data-dir", str(directory), "--database", ":memory:",
                                "--parent-pid", str(os.getpid())],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError("survey-cli up did not start: " + line + process.stderr.read())
    ready = json.loads(line[len("READY "):])
    trio_admin, trio_relay = clients
    yield {
        "server": ready["mock_server"],
        "relay": ready["push_relay"],
        "admin": trio_admin.Client(base_url=ready["mock_server"], timeout=70.0, raise_on_unexpected_status=True),
        "control": trio_relay.Client(base_url=ready["push_relay"], timeout=70.0, raise_on_unexpected_status=True),
        "directory": directory,
    }
    process.terminate()
    process.wait(timeout=10)
