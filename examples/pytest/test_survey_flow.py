"""Register -> clock advance -> push -> answer -> submission, through the admin API and a device run by survey-cli."""
import json
import subprocess

from conftest import EVENT_SCHEMA, STATUS_SCHEMA, binary, checked_events

SURVEY = {
    "name": "Daily mood",
    "survey_type": "tracking_survey",
    "content": [
        {"question_id": "mood", "question_type": "slider", "question_text": "How do you feel?", "min": "0", "max": "10"},
        {"question_id": "note", "question_type": "free_response", "question_text": "Anything else?",
         "text_field_type": "SINGLE_LINE_TEXT"},
    ],
    "schedules": [{"type": "relative", "days_after": 0, "hour": 13, "minute": 0, "anchor": "registration"}],
}


def make_study(trio):
    status, study = trio.admin.post("/studies", {"name": "pytest study", "scheduling": "server", "timezone": "UTC",
                                                 "clock": {"frozen_at": "2026-05-04T09:00:00Z"}})
    assert status == 201, study
    study_id = study["study_id"]
    status, created = trio.admin.post(f"/studies/{study_id}/surveys", SURVEY)
    assert status == 201, created
    status, people = trio.admin.post(f"/studies/{study_id}/participants", {})
    assert status == 201, people
    return study_id, created["survey_id"], people["participants"][0]


def register(trio, tmp_path, participant):
    lines = trio.device("register", "--data-dir", str(tmp_path), "--server", trio.server_url,
                        "--relay", trio.relay_url, "--patient-id", participant["patient_id"],
                        "--password", participant["password"], "--timezone", "UTC")
    for line in lines:
        EVENT_SCHEMA.validate(line)
    assert any(line.get("event") == "registered" for line in lines), lines


def test_health_and_reference(trio):
    assert trio.admin.get("/health") == (200, {"status": "ok"})
    status, document = trio.admin.get("/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.1")
    status, health = trio.control.get("/health")
    assert status == 200 and health["status"] == "ok" and health["version"]


def test_a_pushed_survey_is_answered_and_decrypted(trio, tmp_path):
    study_id, survey_id, participant = make_study(trio)
    register(trio, tmp_path, participant)
    # The device listens (answering what arrives) until its answers are accepted.
    listener = subprocess.Popen([binary("survey-cli"), "device", "listen", "--data-dir", str(tmp_path), "--auto-answer",
                                 "--answer-value", "7", "--for", "60s", "--until", "submitted"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == '{"event":"listening"}'
        # 09:00 -> 13:30: the 13:00 occurrence falls due; the call returns once its push reached the relay.
        status, moved = trio.admin.post(f"/studies/{study_id}/clock", {"advance_seconds": 4 * 3600 + 1800})
        assert status == 200, moved
        assert [push["patient_id"] for push in moved["fired"]] == [participant["patient_id"]]
        out, err = listener.communicate(timeout=60)
    finally:
        if listener.poll() is None:
            listener.kill()
    assert listener.returncode == 0, out + err
    events = checked_events(out)
    assert [e["event"] for e in events if e["event"] in ("push_received", "survey_available", "submitted")] == \
        ["push_received", "survey_available", "submitted"], events
    # The survey's questions come with it: what to answer, and how.
    available = next(e for e in events if e["event"] == "survey_available")
    assert available["questions"] == [
        {"question_id": "mood", "question_type": "slider", "question_text": "How do you feel?", "required": False,
         "min": "0", "max": "10"},
        {"question_id": "note", "question_type": "free_response", "question_text": "Anything else?", "required": False,
         "text_field_type": "SINGLE_LINE_TEXT"},
    ], available
    status = subprocess.run([binary("survey-cli"), "device", "status", "--data-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=30)
    assert status.returncode == 0, status.stderr
    held = json.loads(status.stdout)
    STATUS_SCHEMA.validate(held)
    assert held["registered"] and held["pending_surveys"] == [] and held["uploads_waiting"] == 0
    status, submissions = trio.admin.get(f"/studies/{study_id}/submissions?patient_id={participant['patient_id']}")
    assert status == 200
    assert [s["survey_id"] for s in submissions] == [survey_id]
    answers = {answer["question_id"]: answer["answer"] for answer in submissions[0]["answers"]}
    assert answers == {"mood": "7", "note": "7"}
    # The journal saw the device's upload.
    status, journal = trio.admin.get("/requests?path=/upload")
    assert status == 200
    assert any(entry["participant"] == participant["patient_id"] and entry["status"] == 200 for entry in journal["requests"])


def test_listen_until_times_out_with_exit_1(trio, tmp_path):
    _, _, participant = make_study(trio)
    register(trio, tmp_path, participant)
    result = subprocess.run([binary("survey-cli"), "device", "listen", "--data-dir", str(tmp_path), "--for", "1s",
                             "--until", "survey_available"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert checked_events(result.stdout)[-1]["code"] == "until_not_seen"


def test_devices_over_http_wait_instead_of_sleeping(trio):
    """The same journey with a device hosted by `survey-cli up` (the devices API) and waits instead of sleeps."""
    study_id, survey_id, participant = make_study(trio)
    device = trio.devices.create(participant["patient_id"], participant["password"], timezone="UTC", auto_answer=True,
                                 answer_value="5")
    STATUS_SCHEMA.validate(device)
    assert device["registered"] and device["state"] == "running"
    status, moved = trio.admin.post(f"/studies/{study_id}/clock", {"advance_seconds": 4 * 3600 + 1800})
    assert status == 200, moved
    # Until the device reports the upload (at most 30 s), then until the server lists the submission.
    events = trio.devices.wait_for(device["device_id"], "submitted", within="30s")
    for event in events:
        EVENT_SCHEMA.validate(event)
    # The device's push_received carries the push's study time: the push log's due_at, whatever real time it came.
    received = [event for event in events if event["event"] == "push_received"]
    pushes = trio.admin.ok("GET", f"/studies/{study_id}/pushes")
    assert received and received[0]["sent_time"] == pushes[0]["due_at"], (received, pushes)
    submissions = trio.admin.wait_for(f"/studies/{study_id}/submissions", count=1, within="10s", patient_id=participant["patient_id"])
    assert [s["survey_id"] for s in submissions] == [survey_id]
    assert {a["question_id"]: a["answer"] for a in submissions[0]["answers"]} == {"mood": "5", "note": "5"}
    trio.devices.remove(device["device_id"])
    status, _ = trio.devices.get(f"/{device['device_id']}")
    assert status == 404
