#!/usr/bin/env python3
"""Many phones at once against one mock server and relay, written from PROTOCOL.md with no Swift code of ours.

Each phone is a thread with its own keep-alive connections, as a phone holds one: it takes a relay token, registers
(Beiwe's form: hashed temporary password, new password, time zone, token), sends a second token with
`/set_fcm_token`, then mixes `/download_surveys`, `/mobile-heartbeat` and `/get_latest_device_settings`, and uploads
one survey-answers file encrypted in Beiwe's format (raw RSA over the AES key, AES-128-CBC lines) with the key the
registration returned. Meanwhile a prober asks `GET /__admin/health` every 20 ms on its own connection.

Two rounds, each bounded in time:
- `reproducer`: 20 phones of a server-scheduled study, 30 ordinary requests each, no upload: the load that deadlocked
  the mock server (every cooperative thread parked on SQLite's reader pool);
- `flow`: PHONES phones (default 50) through the whole flow, uploads included; the server must hold every upload
  (the admin API's submissions) and every token (the admin API's participant view).

Fails (exit 1) when any request fails or times out, a round passes its deadline, or a health answer takes longer than
--health-limit-ms. Prints one line per round with the counts and the health latencies (max, p99).
With --retry-503 a phone retries a 503 every half second, as a phone retries later (scripts/phones kills PostgreSQL
under such a round: every request must still be answered, and every phone finish).
With --database-back-file, a request is answered (a 503 to retry, or its answer) as soon as its connection is gone or
the database is back, not at the 30 s operation limit: none may end over --back-limit-s (plus a quarter of the outage,
postgres-nio's reconnect backoff) after the database was back.
Usage: phones.py --server URL --relay URL [--phones 50] [--requests 30] [--health-limit-ms 100] [--deadline 120]
       [--timeout 15] [--only reproducer|flow] [--retry-503] [--database-back-file F [--back-limit-s 8]]
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
from pathlib import Path

# Beiwe's password hash and answers encryption: survey_trio.beiwe (Python, this repository's python/ package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from survey_trio.beiwe import answers_csv, encrypted_answers, password_hash  # noqa: E402

SURVEY = {
    "name": "Phones", "survey_type": "tracking_survey",
    "content": [{"question_id": "mood", "question_type": "slider", "question_text": "How do you feel?", "min": "0", "max": "10"}],
    "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}],
}
# The upload's rows, before encryption: the header and one answer to SURVEY's question.
ANSWERS = answers_csv({"mood": ("slider", "How do you feel?", "0-10", "7")})


class Connection:
    """One keep-alive HTTP/1.1 connection to a base URL; reconnects once when the server closed it."""

    def __init__(self, base, timeout):
        parts = urllib.parse.urlsplit(base)
        self.host, self.port, self.timeout = parts.hostname, parts.port, timeout
        self.connection = None

    def request(self, method, path, body=None, headers=None):
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.connection.request(method, path, body=body, headers=headers or {})
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.connection.close()
                self.connection = None
                if attempt == 1:
                    raise

    def json(self, method, path, payload=None):
        body = None if payload is None else json.dumps(payload).encode()
        status, data = self.request(method, path, body, {"Content-Type": "application/json"} if body is not None else {})
        return status, (json.loads(data) if data else None)


class Failure(Exception):
    pass


class Phone(threading.Thread):
    def __init__(self, server, relay, credentials, requests, upload, survey_id, deadline, timeout, retry_503=False):
        super().__init__(daemon=True)
        self.server, self.relay = Connection(server, timeout), Connection(relay, timeout)
        self.patient_id, self.temporary = credentials["patient_id"], credentials["password"]
        self.requests, self.upload, self.survey_id, self.deadline = requests, upload, survey_id, deadline
        self.password = "phone-" + self.temporary
        self.device_id = os.urandom(8).hex()
        self.sent = 0
        self.retry_503 = retry_503
        self.retried = 0
        self.slowest = 0.0
        #: Requests that took over 5 s: (wall-clock end, seconds taken, what).
        self.long = []
        self.current = "start"
        self.error = None
        self.tokens = []

    def form(self, path, fields, password=None):
        fields = dict(fields)
        fields.update(patient_id=self.patient_id, device_id=self.device_id,
                      password=password_hash(password or self.password))
        body = urllib.parse.urlencode(fields).encode()
        self.current = path
        while True:
            began = time.monotonic()
            status, data = self.server.request("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded"})
            took = time.monotonic() - began
            self.slowest = max(self.slowest, took)
            if took > 5:
                self.long.append((time.time(), took, f"{self.patient_id}: {path} answered {status} after {took:.2f} s"))
            self.sent += 1
            # A phone retries later what the server could not do now (its database was away).
            if status != 503 or not self.retry_503 or time.monotonic() > self.deadline:
                return status, data
            self.retried += 1
            time.sleep(0.5)

    def expect(self, status, wanted, what, data):
        if status != wanted:
            raise Failure(f"{self.patient_id}: {what} answered {status}: {data[:200]!r}")

    def token(self):
        self.current = "POST /v1/devices"
        status, body = self.relay.json("POST", "/v1/devices", {"platform": "android", "app_id": "phones"})
        self.expect(status, 201, "POST /v1/devices", json.dumps(body).encode())
        self.tokens.append(body["token"])
        return body["token"]

    def run(self):
        try:
            first = self.token()
            status, data = self.form("/register_user", {"new_password": self.password, "timezone": "America/New_York",
                                                        "fcm_token": first, "phone_number": "0"}, password=self.temporary)
            self.expect(status, 200, "/register_user", data)
            registration = json.loads(data)
            status, data = self.form("/set_fcm_token", {"fcm_token": self.token()})
            self.expect(status, 204, "/set_fcm_token", data)
            routes = ["/download_surveys", "/mobile-heartbeat", "/get_latest_device_settings"]
            for index in range(self.requests):
                if time.monotonic() > self.deadline:
                    raise Failure(f"{self.patient_id}: past the round's deadline after {self.sent} requests")
                route = routes[index % len(routes)]
                status, data = self.form(route, {"message": "phones"} if route == "/mobile-heartbeat" else {})
                self.expect(status, 200, route, data)
            if self.upload:
                name = f"{self.patient_id}_surveyAnswers_{self.survey_id}_{int(time.time() * 1000)}.csv"
                status, data = self.form("/upload", {"file_name": name, "file": encrypted_answers(registration["client_public_key"], ANSWERS)})
                self.expect(status, 200, "/upload", data)
        except Exception as error:  # noqa: BLE001 - every failure is reported by the round
            self.error = f"{self.patient_id} at {self.current}: {type(error).__name__}: {error}"


class HealthProbe(threading.Thread):
    def __init__(self, server, timeout):
        super().__init__(daemon=True)
        self.connection = Connection(server, timeout)
        self.latencies = []
        self.errors = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                status, _ = self.connection.request("GET", "/__admin/health")
                if status != 200:
                    self.errors.append(f"health answered {status}")
            except Exception as error:  # noqa: BLE001
                self.errors.append(f"health: {type(error).__name__}: {error}")
            self.latencies.append(time.monotonic() - started)
            self.stop.wait(0.02)


def setup(admin, phones):
    status, study = admin.json("POST", "/__admin/studies", {"name": "phones", "scheduling": "server", "timezone": "UTC"})
    assert status == 201, study
    study_id = study["study_id"]
    status, survey = admin.json("POST", f"/__admin/studies/{study_id}/surveys", SURVEY)
    assert status == 201, survey
    status, people = admin.json("POST", f"/__admin/studies/{study_id}/participants", {"count": phones})
    assert status == 201, people
    return study_id, survey["survey_id"], people["participants"]


def round_(name, args, phones, requests, upload):
    admin = Connection(args.server, args.timeout)
    study_id, survey_id, people = setup(admin, phones)
    probe = HealthProbe(args.server, args.timeout)
    probe.start()
    started = time.monotonic()
    deadline = started + args.deadline
    threads = [Phone(args.server, args.relay, p, requests, upload, survey_id, deadline, args.timeout, args.retry_503) for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + args.timeout)
    elapsed = time.monotonic() - started
    probe.stop.set()
    probe.join(args.timeout + 1)
    problems = [t.error for t in threads if t.error]
    problems += [f"{t.patient_id}: still running at the deadline" for t in threads if t.is_alive()]
    problems += probe.errors
    latencies = sorted(probe.latencies)
    worst = latencies[-1] * 1000 if latencies else 0.0
    p99 = latencies[int(0.99 * (len(latencies) - 1))] * 1000 if latencies else 0.0
    slow = [l for l in latencies if l * 1000 > args.health_limit_ms]
    if slow:
        problems.append(f"{len(slow)} of {len(latencies)} health answers took over {args.health_limit_ms} ms (worst {worst:.1f} ms)")
    slowest = max((t.slowest for t in threads), default=0.0)
    if args.database_back_file:
        # Answered as soon as the database is back: no request may end more than the limit after that moment having
        # waited longer (before issue 51's fix one waited out the 30 s operation limit). The limit is --back-limit-s
        # plus a quarter of the outage: postgres-nio's pool retries a failed connection after 100 ms × 1.25^n, so its
        # next attempt comes up to about a quarter of the outage after the database is back.
        killed = back = None
        while back is None and time.monotonic() < deadline + args.timeout:
            try:
                killed, back = (float(word) for word in Path(args.database_back_file).read_text().split())
            except (OSError, ValueError):
                time.sleep(0.2)
        if back is None:
            problems.append(f"the database was not back by the round's deadline ({args.database_back_file} never written)")
        else:
            limit = args.back_limit_s + 0.25 * (back - killed)
            for end, took, what in (entry for t in threads for entry in t.long):
                if took > limit and end > back + limit:
                    problems.append(f"{what}: it ended {end - back:.1f} s after the database was back (limit {limit:.1f} s)")
    if upload and not problems:
        status, submissions = admin.json("GET", f"/__admin/studies/{study_id}/submissions")
        held = {s["patient_id"] for s in submissions} if status == 200 else set()
        if len(held) != phones:
            problems.append(f"the server holds the answers of {len(held)} of {phones} phones")
        for thread in threads:
            status, view = admin.json("GET", f"/__admin/participants/{thread.patient_id}")
            if status != 200 or view.get("push_token") != thread.tokens[-1]:
                problems.append(f"{thread.patient_id}: the server holds token {view.get('push_token') if view else None}, "
                                f"not the last one sent")
                break
    total = sum(t.sent for t in threads)
    retried = sum(t.retried for t in threads)
    print(f"phones: {name}: {phones} phones, {total} mobile requests in {elapsed:.1f} s ({total / elapsed:.0f}/s); "
          f"health {len(latencies)} probes, p99 {p99:.1f} ms, max {worst:.1f} ms; slowest mobile request {slowest:.2f} s; "
          f"{retried} answers 503 retried; "
          f"{len(problems)} problem(s)", flush=True)
    for problem in problems[:20]:
        print(f"phones:   {problem}", file=sys.stderr, flush=True)
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--relay", required=True)
    parser.add_argument("--phones", type=int, default=50)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--database-back-file", default=None,
                        help="a file the outage writes when the database was killed and when it was back into (two Unix "
                             "times): see --back-limit-s")
    parser.add_argument("--back-limit-s", type=float, default=8,
                        help="with --database-back-file: fail when a request ended more than this (plus a quarter of the "
                             "outage, the pool's reconnect backoff) after the database was back, having taken longer")
    parser.add_argument("--health-limit-ms", type=float, default=100)
    parser.add_argument("--deadline", type=float, default=120, help="seconds each round may take")
    parser.add_argument("--timeout", type=float, default=15, help="seconds one request may take")
    parser.add_argument("--only", choices=["reproducer", "flow"], help="run one round")
    parser.add_argument("--retry-503", action="store_true", help="phones retry a 503 every 0.5 s until the deadline (a database outage)")
    args = parser.parse_args()
    ok = True
    for name, phones, requests, upload in [("reproducer", 20, 30, False), ("flow", args.phones, args.requests, True)]:
        if args.only and name != args.only:
            continue
        try:
            ok = round_(name, args, phones, requests, upload) and ok
        except Exception as error:  # noqa: BLE001 - a set-up or admin call that failed or hung fails the run
            print(f"phones: {name}: {type(error).__name__}: {error} (the server stopped answering?)", file=sys.stderr, flush=True)
            ok = False
    print(f"phones: {'passed' if ok else 'FAILED'}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
