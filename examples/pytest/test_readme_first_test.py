"""The first test of python/README.md, as it stands there (kept equal by this file's own check below)."""
from pathlib import Path

def test_a_push_is_answered(trio):
    study = trio.admin.ok("POST", "/studies", {"name": "s", "scheduling": "server", "timezone": "UTC",
                                               "clock": {"frozen_at": "2026-05-04T08:59:00Z"}})
    study_id = study["study_id"]
    trio.admin.ok("POST", f"/studies/{study_id}/surveys", {
        "name": "Mood", "survey_type": "tracking_survey",
        "content": [{"question_id": "mood", "question_type": "slider", "question_text": "Mood?", "min": "0", "max": "10"}],
        "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}]})
    person = trio.admin.ok("POST", f"/studies/{study_id}/participants", {"count": 1})["participants"][0]
    device = trio.devices.create(person["patient_id"], person["password"], timezone="UTC", auto_answer=True, answer_value="7")
    trio.admin.ok("POST", f"/studies/{study_id}/clock", {"advance_seconds": 120})      # 09:00 passes: the push goes out
    trio.devices.wait_for(device["device_id"], "submitted", within="30s")            # the device answered it
    answers = trio.admin.wait_for(f"/studies/{study_id}/submissions", count=1, within="10s")
    assert answers[0]["answers"][0]["answer"] == "7"


def test_the_readme_shows_this_test():
    readme = (Path(__file__).resolve().parents[2] / "python" / "README.md").read_text()
    source = Path(__file__).read_text()
    start = source.index("def test_a_push_is_answered")
    end = source.index("def test_the_readme_shows_this_test")
    assert source[start:end].strip() in readme
