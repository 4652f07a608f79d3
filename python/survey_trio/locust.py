"""Locust users that act as Beiwe phones (`pip install "survey-trio[locust]"`; PROTOCOL.md §9, "Load engines").

`BeiwePhone` registers once (a relay token first when `--relay-url` is given), tells the server its push token, then
downloads surveys, sends heartbeats and uploads answers encrypted in Beiwe's format, each a named request
(`register_user`, `set_fcm_token`, `download_surveys`, `mobile-heartbeat`, `upload`), with `wait_time` as its think
time. `RelayDevice` holds a relay device stream and acks what arrives (`relay_token`, `stream`, `ack`). Subclass them in
a locustfile to change the mix (`tasks`, weights, `wait_time`) or a form field (`register_fields`, `upload_rows`).
`BeiweRegistrar` registers again and again as `survey-cli load register`'s iterations do (registration alone, to load
or to measure that route).

Credentials: against the trio, each Locust process (a worker, or a run without workers) makes its own study with
`--participants` participants and a survey through the admin API when the test starts; against any other
Beiwe-compatible server, `--participants-file` (the load tool's file: `{"participants": [{"patient_id", "password"}]}`)
names them, and no admin API is needed. `examples/locust/locustfile.py` runs them, headless or distributed.
"""
import json
import queue
import threading
import time
import uuid

import requests
from locust import HttpUser, between, constant, events, task
from locust.exception import StopUser

from . import beiwe

SURVEY = {
    "name": "Locust", "survey_type": "tracking_survey",
    "content": [{"question_id": "mood", "question_type": "slider", "question_text": "How do you feel?", "min": "0", "max": "10"}],
    "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}],
}

_credentials = queue.Queue()
_study = {}
_lock = threading.Lock()


@events.init_command_line_parser.add_listener
def _arguments(parser):
    parser.add_argument("--participants", type=int, default=100, include_in_web_ui=True,
                       help="participants each Locust process creates through the trio's admin API at test start")
    parser.add_argument("--participants-file", default="", include_in_web_ui=True,
                       help="the load tool's participants file, for a server without the trio's admin API")
    parser.add_argument("--relay-url", default="", include_in_web_ui=True, help="the push relay (devices get their tokens there)")
    parser.add_argument("--timezone", default="America/New_York", include_in_web_ui=True, help="the zone every phone registers in")
    parser.add_argument("--record-file", default="", include_in_web_ui=False,
                       help="append this process's study id, survey id and participant count to FILE (a JSON line) at test start")


@events.test_start.add_listener
def _prepare(environment, **_):
    """Makes (or reads) this process's participants; the master of a distributed run makes none (it runs no users)."""
    from locust.runners import MasterRunner
    if isinstance(environment.runner, MasterRunner):
        return
    options = environment.parsed_options
    with _lock:
        while not _credentials.empty():
            _credentials.get_nowait()
        if options.participants_file:
            with open(options.participants_file) as handle:
                listed = json.load(handle)
            _study.update(study_id=listed.get("study_id"), survey_id=listed.get("survey_id"))
            people = listed["participants"]
        else:
            admin = environment.host.rstrip("/") + "/__admin"
            study = _admin(admin, "/studies", {"name": f"locust-{uuid.uuid4().hex[:8]}", "timezone": "UTC", "scheduling": "device"})
            survey = _admin(admin, f"/studies/{study['study_id']}/surveys", SURVEY)
            made = _admin(admin, f"/studies/{study['study_id']}/participants", {"count": options.participants})
            _study.update(study_id=study["study_id"], survey_id=survey["survey_id"])
            people = made["participants"]
        for person in people:
            _credentials.put(person)
        if options.record_file:
            with open(options.record_file, "a") as out:
                out.write(json.dumps({**_study, "participants": len(people)}) + "\n")


def _take_participant():
    """The next participant of this process, or StopUser when there are more users than participants."""
    try:
        return _credentials.get_nowait()
    except queue.Empty:
        raise StopUser() from None


def _register(user, route, patient_id, password, device_id, new_password, fcm_token, required=()):
    """`/register_user` (the request `register_user`) with the run's zone and the user's `register_fields()`: Beiwe's
    JSON object, or None with the failure recorded (a status other than 200, an answer that is not a JSON object or
    lacks a `required` member)."""
    fields = beiwe.form(patient_id, password, device_id, new_password=new_password, fcm_token=fcm_token, phone_number="0",
                        timezone=user.environment.parsed_options.timezone, **user.register_fields())
    with user.client.post(route, data=fields, name="register_user", catch_response=True) as response:
        if response.status_code != 200:
            response.failure(f"register_user answered {response.status_code}: {response.text[:200]}")
            return None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or any(key not in answer for key in required):
            response.failure("register_user: the answer is not Beiwe's JSON object")
            return None
        return answer


def _admin(base, path, body):
    response = requests.post(base + path, json=body, timeout=60)
    if response.status_code not in (200, 201):
        raise RuntimeError(f"POST {base}{path} answered {response.status_code}: {response.text[:300]} "
                           "(against a server without the trio's admin API, give --participants-file)")
    return response.json()


class BeiwePhone(HttpUser):
    """A Beiwe phone: registers once, then downloads surveys, sends heartbeats and uploads encrypted answers."""

    abstract = True
    wait_time = between(0.5, 1.5)
    #: The phone's platform: `android` (the plain routes) or `ios` (their `/ios` variants).
    platform = "android"

    def on_start(self):
        person = _take_participant()
        self.patient_id, self.temporary = person["patient_id"], person["password"]
        self.password = "locust-" + self.temporary
        self.device_id = uuid.uuid4().hex
        self.suffix = "/ios" if self.platform == "ios" else ""
        token = self.relay_token() or f"locust-{self.patient_id}"
        self.push_token = token
        answer = _register(self, beiwe.REGISTER + self.suffix, self.patient_id, self.temporary, self.device_id, self.password,
                           token, required=("client_public_key",))
        if answer is None:
            raise StopUser()
        self.public_key = answer["client_public_key"]
        # As the app does after registering: Beiwe stores the push token only from /set_fcm_token.
        self.post(beiwe.SET_TOKEN, "set_fcm_token", 204, fcm_token=token)

    def relay_token(self):
        """A token from the relay (`--relay-url`), or None without one."""
        relay = self.environment.parsed_options.relay_url
        if not relay:
            return None
        with self.client.post(relay.rstrip("/") + "/v1/devices", json={"platform": self.platform, "app_id": "locust"},
                              name="relay_token", catch_response=True) as response:
            if response.status_code != 201:
                response.failure(f"relay answered {response.status_code}")
                return None
            return response.json()["token"]

    def register_fields(self):
        """Extra `/register_user` fields (override to add a custom one)."""
        return {}

    def upload_rows(self):
        """The CSV rows of one survey answer (override for another survey)."""
        return beiwe.answers_csv({"mood": ("slider", "How do you feel?", "0-10", "7")})

    def post(self, route, name, expected=200, **fields):
        with self.client.post(route + self.suffix, data=beiwe.form(self.patient_id, self.password, self.device_id, **fields),
                              name=name, catch_response=True) as response:
            if response.status_code != expected:
                response.failure(f"{name} answered {response.status_code}: {response.text[:200]}")
            return response

    @task(3)
    def download_surveys(self):
        response = self.post(beiwe.DOWNLOAD, "download_surveys")
        if response.status_code == 200:
            try:
                json.loads(response.text)
            except ValueError:
                response.failure("download_surveys: the answer is not JSON")

    @task(2)
    def heartbeat(self):
        self.post(beiwe.HEARTBEAT, "mobile-heartbeat", message="locust")

    @task(1)
    def upload(self):
        survey = _study.get("survey_id") or "survey"
        name = f"{self.patient_id}_surveyAnswers_{survey}_{int(time.time() * 1000)}.csv"
        self.post(beiwe.UPLOAD, "upload", file_name=name, file=beiwe.encrypted_answers(self.public_key, self.upload_rows()))


class BeiweRegistrar(HttpUser):
    """Registration alone, as `survey-cli load register`'s iterations run it: each task takes the next participant,
    registers a new device for them (`register_user`) with their own password as the new one, so that the next turn
    registers them again, and puts them back. A 200 that is not Beiwe's JSON object is a failure, as in the load tool.
    No think time by default (`wait_time`); `register_fields` adds form fields."""

    abstract = True
    wait_time = constant(0)

    def register_fields(self):
        """Extra `/register_user` fields (override to add a custom one)."""
        return {}

    @task
    def register(self):
        person = _take_participant()
        try:
            patient_id, password = person["patient_id"], person["password"]
            _register(self, beiwe.REGISTER, patient_id, password, uuid.uuid4().hex, password, f"locust-{patient_id}")
        finally:
            _credentials.put(person)


class RelayDevice(HttpUser):
    """A push flow on the relay, end to end: a device token, its event stream open, a push sent to it through the
    relay's FCM API (`fcm_send`), its arrival on the stream timed as the request `delivery` (from the send to the
    event), and the ack (`ack`). `--relay-url` names the relay (default: `--host`)."""

    abstract = True
    wait_time = between(0.5, 1.5)
    #: How long a push may take to arrive before its delivery counts as failed.
    delivery_timeout = 5.0

    def on_start(self):
        relay = self.environment.parsed_options.relay_url or self.host
        self.relay = relay.rstrip("/")
        self.sent = 0
        with self.client.post(self.relay + "/v1/devices", json={"platform": "android", "app_id": "locust"}, name="relay_token",
                              catch_response=True) as response:
            if response.status_code != 201:
                response.failure(f"relay answered {response.status_code}")
                raise StopUser()
            self.token = response.json()["token"]

    @task
    def push_round_trip(self):
        self.sent += 1
        marker = f"{self.token[:8]}-{self.sent}"
        with self.client.get(f"{self.relay}/v1/devices/{self.token}/stream", stream=True, name="stream",
                             timeout=self.delivery_timeout + 5, catch_response=True) as stream:
            if stream.status_code != 200:
                stream.failure(f"stream answered {stream.status_code}")
                return
            stream.success()
            lines = stream.iter_lines(decode_unicode=True)
            next(lines, None)  # ": connected"
            started = time.monotonic()
            sent = self.client.post(f"{self.relay}/v1/projects/locust/messages:send",
                                    json={"message": {"token": self.token, "data": {"marker": marker}}}, name="fcm_send")
            if sent.status_code != 200:
                return
            message_id, error = None, None
            event_id = None
            try:
                for line in lines:
                    if line.startswith("id:"):
                        event_id = line[3:].strip()
                    elif line.startswith("data:") and marker in line:
                        message_id = event_id
                        break
                    if time.monotonic() - started > self.delivery_timeout:
                        break
            except requests.exceptions.RequestException as failure:
                error = failure
            elapsed = (time.monotonic() - started) * 1000
            if message_id is None and error is None:
                error = TimeoutError(f"no push within {self.delivery_timeout} s")
            self.environment.events.request.fire(request_type="PUSH", name="delivery", response_time=elapsed, response_length=0,
                                                 exception=error, context={})
        if message_id:
            self.client.post(f"{self.relay}/v1/devices/{self.token}/ack", json={"ids": [message_id]}, name="ack")
