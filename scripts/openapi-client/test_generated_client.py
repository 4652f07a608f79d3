"""A study from creation to decrypted answers, driven through the generated clients only (no hand-written HTTP), with
weekly and relative schedules (the variants the generator dropped when they were inline) and waits instead of sleeps."""
import datetime
import subprocess

from conftest import binary


def test_a_study_runs_through_the_generated_clients(trio, tmp_path):
    from trio_admin.api.admin import (create_participants, create_study, create_survey, list_pushes, list_server_requests,
                                      list_submissions, move_study_clock)
    from trio_admin.models import (ClockRequest, CreateParticipantsType0, CreateStudy, CreateStudyClockType0,
                                   CreateStudyScheduling, CreateSurvey, CreateSurveySurveyType, Error, Question,
                                   QuestionQuestionType, RelativeSchedule, WeeklySchedule)
    from trio_relay.api.control import list_trace

    admin, control = trio["admin"], trio["control"]
    study = create_study.sync(client=admin, body=CreateStudy(
        name="generated", scheduling=CreateStudyScheduling.SERVER, timezone="UTC",
        clock=CreateStudyClockType0(frozen_at=datetime.datetime(2026, 5, 4, 9, 0, tzinfo=datetime.timezone.utc))))
    assert not isinstance(study, Error), study
    survey = create_survey.sync(study.study_id, client=admin, body=CreateSurvey(
        name="mood", survey_type=CreateSurveySurveyType.TRACKING_SURVEY,
        content=[Question(question_id="mood", question_type=QuestionQuestionType.SLIDER, question_text="Mood?", min_="0", max_="10")],
        # Monday 2026-05-04 is day 1; the relative one falls at 13:00 on the day of registration.
        schedules=[WeeklySchedule(type_="weekly", day_of_week=3, hour=9, minute=0),
                   RelativeSchedule(type_="relative", days_after=0, hour=13, minute=0, anchor="registration")]))
    assert not isinstance(survey, Error), survey
    people = create_participants.sync(study.study_id, client=admin, body=CreateParticipantsType0(count=1))
    participant = people.participants[0]

    register = subprocess.run([binary("survey-cli"), "device", "register", "--data-dir", str(tmp_path), "--server", trio["server"],
                               "--relay", trio["relay"], "--patient-id", participant.patient_id, "--password", participant.password,
                               "--timezone", "UTC"], capture_output=True, text=True, timeout=60)
    assert register.returncode == 0, register.stdout + register.stderr
    listener = subprocess.Popen([binary("survey-cli"), "device", "listen", "--data-dir", str(tmp_path), "--auto-answer",
                                 "--answer-value", "6", "--for", "60s", "--until", "submitted"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == '{"event":"listening"}'
        moved = move_study_clock.sync(study.study_id, client=admin, body=ClockRequest(advance_seconds=4 * 3600 + 1800))
        assert not isinstance(moved, Error), moved
        # Waits, not sleeps: each listing answers once what the test expects is there.
        pushes = list_pushes.sync(study.study_id, client=admin, patient_id=participant.patient_id, wait="20s", min_count=1)
        assert [push.patient_id for push in pushes] == [participant.patient_id]
        submissions = list_submissions.sync(study.study_id, client=admin, wait="30s", min_count=1)
        assert [s.survey_id for s in submissions] == [survey.survey_id]
        assert {a.question_id: a.answer for a in submissions[0].answers} == {"mood": "6"}
        acked = list_trace.sync(client=control, event="acked", wait="10s", min_count=1)
        assert acked and all(entry.event.value == "acked" for entry in acked)
        journal = list_server_requests.sync(client=admin, participant=participant.patient_id, path="/upload")
        assert journal.requests and all(entry.participant == participant.patient_id for entry in journal.requests)
        out, err = listener.communicate(timeout=60)
        assert listener.returncode == 0, out + err
    finally:
        if listener.poll() is None:
            listener.kill()
