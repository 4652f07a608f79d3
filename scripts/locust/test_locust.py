"""survey_trio.locust under Locust itself, distributed as Python teams run it (issue 54): one master and two
workers on loopback, headless, against the trio. Zero failures, every named request made, and the server holds what
the phones did: the registrations, and every uploaded answer decrypted (scripts/apitest runs this)."""
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import urllib.request

import survey_trio

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "examples" / "locust" / "locustfile.py"


def admin(url, path):
    with urllib.request.urlopen(url + "/__admin" + path, timeout=30) as response:
        return json.load(response)


def test_distributed_headless_run_against_the_trio(tmp_path):
    bin_dir = os.environ.get("TRIO_BIN_DIR")
    with survey_trio.start(tmp_path / "trio", bin_dir=bin_dir) as trio:
        server, relay = trio.server_url, trio.relay_url
        record = tmp_path / "studies.jsonl"
        port = str(5557 + os.getpid() % 1000)
        locust = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--host", server]
        common = ["--relay-url", relay, "--participants", "15", "--record-file", str(record)]
        master = subprocess.Popen(locust + common + ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port,
                                                     "--expect-workers", "2", "--headless", "-u", "20", "-r", "10", "-t", "12s",
                                                     "--csv", str(tmp_path / "run"), "--only-summary", "--stop-timeout", "5"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        workers = [subprocess.Popen(locust + common + ["--worker", "--master-host", "127.0.0.1", "--master-port", port],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
        try:
            output, _ = master.communicate(timeout=90)
        finally:
            for worker in workers:
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
        print(output[-3000:])
        assert master.returncode == 0, output[-3000:]

        with open(tmp_path / "run_stats.csv") as handle:
            rows = {row["Name"]: row for row in csv.DictReader(handle)}
        for name in ("relay_token", "register_user", "set_fcm_token", "download_surveys", "mobile-heartbeat", "upload",
                     "stream", "fcm_send", "delivery", "ack"):
            assert int(rows[name]["Request Count"]) > 0, (name, rows.get(name))
        total = rows["Aggregated"]
        assert int(total["Failure Count"]) == 0, total
        print(f"locust: {total['Request Count']} requests, {total['Failure Count']} failures, "
              f"{float(total['Requests/s']):.1f} req/s, p50 {total['50%']} ms, p99 {total['99%']} ms")

        # The server holds what the phones did: one study per worker, its users registered, every upload decrypted.
        studies = [json.loads(line) for line in record.read_text().splitlines()]
        assert len(studies) == 2, studies
        registered = uploads = 0
        for study in studies:
            stats = admin(server, f"/studies/{study['study_id']}/stats")
            registered += stats["registered"]
            submissions = admin(server, f"/studies/{study['study_id']}/submissions")
            uploads += len(submissions)
            for submission in submissions:
                assert [a["answer"] for a in submission["answers"] if a["question_id"] == "mood"] == ["7"], submission
        # 20 users at weights 4:1: 16 phones (each registers once) and 4 devices.
        phones = registered
        assert phones == 16, f"{registered} registrations for 16 phones"
        assert uploads >= int(rows["upload"]["Request Count"]) > 0, (uploads, rows["upload"]["Request Count"])
        print(f"server: {registered} registrations, {uploads} uploads decrypted")


def test_registration_alone_from_a_participants_file(tmp_path):
    """examples/locust/registration.py (BeiweRegistrar) with the load tool's participants file, as against a server
    without the trio's admin API: every participant registered, again and again, with no failure."""
    bin_dir = os.environ.get("TRIO_BIN_DIR")
    with survey_trio.start(tmp_path / "trio", bin_dir=bin_dir) as trio:
        people = tmp_path / "participants.json"
        subprocess.run([str(survey_trio.trio.binary("survey-cli", bin_dir)), "load", "setup", "--server", trio.server_url,
                        "--participants", "12", "--out", str(people)], check=True, capture_output=True, timeout=60)
        listed = json.loads(people.read_text())
        result = subprocess.run([sys.executable, "-m", "locust", "-f", str(ROOT / "examples" / "locust" / "registration.py"),
                                 "--host", trio.server_url, "--participants-file", str(people), "--headless", "-u", "4", "-r", "4",
                                 "-t", "4s", "--csv", str(tmp_path / "reg"), "--only-summary", "--stop-timeout", "2"],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr[-3000:]
        with open(tmp_path / "reg_stats.csv") as handle:
            row = {r["Name"]: r for r in csv.DictReader(handle)}["register_user"]
        assert int(row["Failure Count"]) == 0, row
        assert int(row["Request Count"]) > 12, row  # each participant more than once
        stats = admin(trio.server_url, f"/studies/{listed['study_id']}/stats")
        assert stats["registered"] == 12, stats
        print(f"locust registration: {row['Request Count']} registrations of 12 participants, 0 failures, "
              f"{float(row['Requests/s']):.1f}/s")
