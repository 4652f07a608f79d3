"""Two tests' studies on one trio do not see each other (the plugin's `trio_study` fixture)."""
MOOD = {"name": "Mood", "survey_type": "tracking_survey",
        "content": [{"question_id": "mood", "question_type": "slider", "question_text": "Mood?", "min": "0", "max": "10"}],
        "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}]}


def test_a_study_of_its_own_with_scoped_faults(trio, trio_study):
    other = trio_study.__class__(trio, frozen_at="2026-05-04T08:59:00Z")  # a second test's study, beside this one
    try:
        for study in (trio_study, other):
            study.add_survey(MOOD)
            study.device(auto_answer=True, answer_value="5")
        # This study's pushes are dropped by the relay; the other's are not.
        trio_study.fault(drop_rate=1)
        trio_study.advance(120)
        other.advance(120)
        assert [s["answers"][0]["answer"] for s in other.submissions(count=1, within="30s")] == ["5"]
        assert trio_study.submissions() == []
        assert len(trio_study.pushes(count=1)) == 1 and len(other.pushes(count=1)) == 1
        assert {p["patient_id"] for p in trio_study.pushes()}.isdisjoint({p["patient_id"] for p in other.pushes()})
    finally:
        other.close()
