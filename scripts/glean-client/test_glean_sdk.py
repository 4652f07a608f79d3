"""Glean's own Python SDK (glean-sdk from PyPI, unchanged) reporting to the mock server (PROTOCOL.md §8).

The only setting is Glean's `server_endpoint`. The custom ping here leaves out the client id (`include_client_id:
false`, as custom pings often do); Glean's Python SDK sends no locale; pings without events leave `events` out.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(os.environ.get("TRIO_BIN_DIR", HERE.parents[1] / ".build" / "debug"))


def test_glean_pings_are_stored_listed_and_gap_reported():
    server = subprocess.Popen([str(BIN / "mock-server"), "--database", ":memory:", "--parent-pid", str(os.getpid())],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        url = json.loads(server.stdout.readline().decode().split(" ", 1)[1])["url"]
        # Glean keeps global state for its process: it runs in a child of its own.
        script = f"""
import sys, tempfile
from pathlib import Path
from glean import Glean, Configuration, load_metrics, load_pings
metrics = load_metrics(Path({str(HERE)!r}) / "metrics.yaml")
pings = load_pings(Path({str(HERE)!r}) / "pings.yaml")
Glean.initialize(application_id="org.example.surveys", application_version="1.0", upload_enabled=True,
                 data_dir=Path(tempfile.mkdtemp()), configuration=Configuration(server_endpoint={url!r}, channel="testing"))
metrics.survey.opened.add(2)
metrics.survey.answered.record(metrics.survey.AnsweredExtra(survey_id="s1"))
pings.survey_activity.submit()
Glean.shutdown()
"""
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)

        def stored():
            with urllib.request.urlopen(url + "/__admin/telemetry") as response:
                return json.load(response)

        deadline = time.time() + 30
        pings = stored()
        while not any(p["ping"] == "survey-activity" for p in pings) and time.time() < deadline:
            time.sleep(0.2)
            pings = stored()
        activity = [p for p in pings if p["ping"] == "survey-activity"]
        assert len(activity) == 1, [p["ping"] for p in pings]
        ping = activity[0]
        assert ping["app_id"] == "org-example-surveys" and "client_id" not in ping
        body = ping["body"]
        assert body["metrics"]["counter"]["survey.opened"] == 2
        assert [(e["category"], e["name"], e["extra"]["survey_id"]) for e in body["events"]] == [("survey", "answered", "s1")]
        assert "locale" not in body["client_info"] and body["client_info"]["telemetry_sdk_build"]
        # Every ping Glean sent was stored (none refused), and the gap report leaves out pings without a client id.
        with urllib.request.urlopen(url + "/__admin/requests?path=/submit") as response:
            statuses = [entry["status"] for entry in json.load(response)["requests"]]
        assert statuses and set(statuses) == {200}, statuses
        with urllib.request.urlopen(url + "/__admin/telemetry/gaps") as response:
            gaps = json.load(response)
        assert all(gap["client_id"] for gap in gaps) and all(gap["ping"] != "survey-activity" for gap in gaps)
    finally:
        server.terminate()
        server.wait(timeout=5)
