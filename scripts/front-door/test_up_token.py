"""`survey-cli up` bound beyond loopback is never without a token (the container image's case): with neither `--token`
nor `TRIO_TOKEN` it generates one and tells it only in the READY line; `survey-cli healthcheck` reads it from the data
directory's READY file, and fails once `up` is gone."""
import json
import os
import re
import subprocess
import tempfile
import urllib.error
import urllib.request

from conftest import BIN


def status(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def healthcheck(directory):
    return subprocess.run([str(BIN / "survey-cli"), "healthcheck", "--data-dir", directory], capture_output=True, text=True,
                          timeout=30)


def test_up_beyond_loopback_generates_a_token_and_healthcheck_reads_it():
    directory = tempfile.mkdtemp(prefix="up-token-")
    environment = {key: value for key, value in os.environ.items() if key != "TRIO_TOKEN"}
    process = subprocess.Popen([str(BIN / "survey-cli"), "up", "--host", "0.0.0.0", "--data-dir", directory, "--database",
                                ":memory:", "--parent-pid", str(os.getpid())], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=environment, text=True)
    try:
        ready = json.loads(process.stdout.readline().split(" ", 1)[1])
        token = ready["token"]
        assert re.fullmatch(r"[0-9a-f]{64}", token), ready
        for url, path in ((ready["mock_server"], "/__admin/info"), (ready["push_relay"], "/__control/stats"),
                          (ready["devices"], "/__devices")):
            url = url.replace("0.0.0.0", "127.0.0.1")
            assert status(url + path) == 401, url + path
            assert status(url + path, token) == 200, url + path
        assert oct(os.stat(os.path.join(directory, "ready.json")).st_mode & 0o777) == "0o600"
        result = healthcheck(directory)
        assert result.returncode == 0 and result.stdout.startswith("healthy: mock-server, push-relay, devices API"), result
    finally:
        process.terminate()
        process.wait(timeout=15)
    result = healthcheck(directory)
    assert result.returncode == 1 and result.stdout.startswith("unhealthy:"), result


def test_a_token_given_is_not_printed():
    directory = tempfile.mkdtemp(prefix="up-token-")
    process = subprocess.Popen([str(BIN / "survey-cli"), "up", "--host", "0.0.0.0", "--data-dir", directory, "--database",
                                ":memory:", "--parent-pid", str(os.getpid())], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=dict(os.environ, TRIO_TOKEN="given-token"), text=True)
    try:
        ready = json.loads(process.stdout.readline().split(" ", 1)[1])
        assert "token" not in ready, ready
        assert status(ready["mock_server"].replace("0.0.0.0", "127.0.0.1") + "/__admin/info", "given-token") == 200
        assert healthcheck(directory).returncode == 0
    finally:
        process.terminate()
        process.wait(timeout=15)
