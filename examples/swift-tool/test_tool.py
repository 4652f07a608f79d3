"""participant-tool (this package, embedding the SDK) against the trio: built by scripts/swift-tool, started by pytest
with a participant's credentials; a study's clock move pushes a survey, the tool answers it, the server decrypts it."""
import json
import os
import subprocess
import time

TOOL = os.environ["PARTICIPANT_TOOL"]


def test_the_tool_answers_a_pushed_survey(trio, tmp_path):
    study = trio.admin.ok("POST", "/studies", {"name": "tool", "scheduling": "server", "timezone": "Europe/Berlin",
                                               "clock": {"frozen_at": "2026-05-04T06:59:00Z"}})
    study_id = study["study_id"]
    survey_id = trio.admin.ok("POST", f"/studies/{study_id}/surveys", {
        "name": "Mood", "survey_type": "tracking_survey",
        "content": [{"question_id": "mood", "question_type": "slider", "question_text": "Mood?", "min": "0", "max": "10"},
                    {"question_id": "note", "question_type": "free_response", "question_text": "Anything else?"}],
        "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}]})["survey_id"]
    person = trio.admin.ok("POST", f"/studies/{study_id}/participants", {"count": 1})["participants"][0]
    tool = subprocess.Popen([TOOL, "--server", trio.server_url, "--relay", trio.relay_url, "--patient-id", person["patient_id"],
                             "--password", person["password"], "--timezone", "Europe/Berlin", "--answer", "8",
                             "--storage", str(tmp_path / "phone"), "--within", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = json.loads(tool.stdout.readline())
        assert started["event"] == "started" and started["push_token"], started
        # Registered once the server lists the participant's push token.
        deadline = time.monotonic() + 30
        while not trio.admin.ok("GET", f"/participants/{person['patient_id']}").get("push_token"):
            assert time.monotonic() < deadline, "the tool never registered"
            time.sleep(0.1)
        trio.admin.ok("POST", f"/studies/{study_id}/clock", {"advance_seconds": 120})   # 09:00 in Berlin passes
        out, err = tool.communicate(timeout=90)
    finally:
        tool.kill()
    lines = [started] + [json.loads(line) for line in out.splitlines()]
    assert tool.returncode == 0, (lines, err)
    events = [line["event"] for line in lines]
    assert "push_received" in events and events[-1] == "submitted", lines
    pushed = next(line for line in lines if line["event"] == "push_received")
    assert pushed["sent_time"] == "2026-05-04T07:00:00", pushed      # 09:00 Berlin (CEST) in Beiwe's UTC form
    submissions = trio.admin.wait_for(f"/studies/{study_id}/submissions", count=1, within="10s")
    assert submissions[0]["survey_id"] == survey_id
    assert {a["question_id"]: a["answer"] for a in submissions[0]["answers"]} == {"mood": "8", "note": "8"}
