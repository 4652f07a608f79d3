"""A test's own corner of a shared trio: a fresh study with its own participants, devices, faults and listings.

`trio_study` (the pytest plugin's function-scoped fixture) gives each test a `Study`; tests running in parallel
(pytest-xdist) or one after another on one trio cannot see each other's pushes, submissions, devices or relay faults.
"""
import urllib.parse
import uuid

from .trio import TrioError


class Study:
    """A fresh study on `trio`: server-scheduled unless told otherwise, its clock frozen at `frozen_at` (UTC) when given."""

    def __init__(self, trio, timezone="UTC", scheduling="server", frozen_at=None, participants=1, **fields):
        self.trio = trio
        body = {"name": f"test-{uuid.uuid4().hex[:8]}", "timezone": timezone, "scheduling": scheduling, **fields}
        if frozen_at:
            body["clock"] = {"frozen_at": frozen_at}
        self.id = trio.admin.ok("POST", "/studies", body)["study_id"]
        #: Credentials (`patient_id`, `password`) of this study's participants.
        self.participants = []
        #: Devices made through `device()`, by device id.
        self.devices = {}
        if participants:
            self.add_participants(participants)

    def add_participants(self, count=1):
        """Makes `count` more participants; returns their credentials."""
        made = self.trio.admin.ok("POST", f"/studies/{self.id}/participants", {"count": count})["participants"]
        self.participants += made
        return made

    def add_survey(self, survey):
        """Adds a survey (docs/openapi/mock-server.json, CreateSurvey); returns its id."""
        return self.trio.admin.ok("POST", f"/studies/{self.id}/surveys", survey)["survey_id"]

    def device(self, participant=None, **fields):
        """A device on the devices API for `participant` (default: the first without one), registered and listening."""
        taken = {device["patient_id"] for device in self.devices.values()}
        person = participant or next((p for p in self.participants if p["patient_id"] not in taken), None)
        if person is None:
            person = self.add_participants(1)[0]
        fields.setdefault("timezone", "UTC")
        created = self.trio.devices.create(person["patient_id"], person["password"], **fields)
        self.devices[created["device_id"]] = created
        return created

    def advance(self, seconds):
        """Moves the study's clock on; what fired (`fired`) and the new time (`now`)."""
        return self.trio.admin.ok("POST", f"/studies/{self.id}/clock", {"advance_seconds": seconds})

    def pushes(self, count=0, within="10s", **query):
        """This study's push log (waiting for `count` entries when given; `TrioError` when they do not come)."""
        return self._listing("pushes", count, within, query)

    def submissions(self, count=0, within="10s", **query):
        """This study's decrypted submissions (waiting for `count` when given)."""
        return self._listing("submissions", count, within, query)

    def _listing(self, name, count, within, query):
        path = f"/studies/{self.id}/{name}"
        if count:
            return self.trio.admin.wait_for(path, count=count, within=within, **query)
        separator = "?" + urllib.parse.urlencode(query) if query else ""
        return self.trio.admin.ok("GET", path + separator)

    def fault(self, **spec):
        """Relay faults (`drop_rate`, `duplicate_rate`, `delay_ms`, `outage`, ...) for this study's devices only: one
        scoped fault per device token, so other tests' devices are untouched. Returns the tokens it applied to."""
        tokens = []
        for device_id in self.devices:
            token = self.trio.devices.status(device_id).get("push_token")
            if token:
                self.trio.control.ok("PUT", "/faults", {**spec, "token": token})
                tokens.append(token)
        if not tokens:
            raise TrioError("this study has no device with a push token to scope the fault to")
        return tokens

    def close(self):
        """Removes this study's devices and clears their faults (the study's rows stay, as history)."""
        for device_id in list(self.devices):
            token = None
            try:
                token = self.trio.devices.status(device_id).get("push_token")
                self.trio.devices.remove(device_id)
            except TrioError:
                pass
            if token:
                self.trio.control.call("PUT", "/faults", {"token": token})
        self.devices.clear()
