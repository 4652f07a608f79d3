"""FCM v1's tables (`ErrorCode`, Google's authentication answers, the `Message` validation rules): a case for every
row of `FCMTables`, with FCM's bodies as firebase-admin reads them."""
import itertools
import json
import time
import urllib.request

import firebase_admin
import pytest
from firebase_admin import credentials, exceptions, messaging

from conftest import Relay, check_every_row_has_a_case, tables

_apps = itertools.count()


def account(relay, project):
    with urllib.request.urlopen(f"{relay.url}/__control/fcm/service-account.json?project_id={project}") as response:
        return json.load(response)


def bearer(relay, project="proj-a"):
    """An access token for a service account of `project`, bought with the account's own assertion (firebase-admin's
    credentials make it exactly as they would for Google)."""
    creds = credentials.Certificate(account(relay, project))
    return creds.get_access_token().access_token


def send(relay, message, project="proj-a", token=None, validate_only=None):
    body = {"message": message}
    if validate_only is not None:
        body["validate_only"] = validate_only
    headers = [("authorization", f"Bearer {token}")] if token else []
    status, answer, _ = relay.request("POST", f"/v1/projects/{project}/messages:send", body, headers=headers)
    return status, answer


def expect(result, status, status_name, error_code=None, reason=None):
    code, answer = result
    assert code == status, result
    error = answer["error"]
    assert error["status"] == status_name and error["code"] == status, answer
    details = error.get("details", [])
    if error_code:
        assert {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code} in details, answer
    if reason:
        info = [d for d in details if d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo"]
        assert info and info[0]["reason"] == reason and info[0]["domain"] == "googleapis.com", answer


def case_unspecified(relay, token):
    # Not simulated: every refusal names its cause; a 500 outage is INTERNAL.
    outage_expect(relay, token, 500, "INTERNAL", "INTERNAL")


def case_invalid_argument(relay, token):
    expect(send(relay, {"token": "", "data": {"a": "b"}}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")


def case_unregistered(relay, token):
    device = relay.device("android")
    assert relay.call("DELETE", f"/v1/devices/{device}")[0] == 204
    expect(send(relay, {"token": device}, token=token), 404, "NOT_FOUND", "UNREGISTERED")


def case_sender_id_mismatch(relay, token):
    # Not simulated: a relay token belongs to no sender; project B's credentials deliver to it on project B's URL.
    device = relay.device("android")
    status, answer = send(relay, {"token": device, "data": {"a": "b"}}, project="proj-b", token=bearer(relay, "proj-b"))
    assert status == 200 and answer["name"].startswith("projects/proj-b/messages/"), answer


def case_quota_exceeded(relay, token):
    limited = Relay("--device-rate", "1")
    try:
        device = limited.device("android")
        results = [send(limited, {"token": device, "data": {"n": str(i)}}) for i in range(3)]
        refused = [r for r in results if r[0] == 429]
        assert refused, results
        expect(refused[0], 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")
    finally:
        limited.stop()


def outage_expect(relay, token, status, status_name, error_code):
    device = relay.device("android")
    assert relay.call("PUT", "/__control/faults", {"outage": {"status": status, "seconds": 30}})[0] == 204
    expect(send(relay, {"token": device, "data": {"a": "b"}}, token=token), status, status_name, error_code)
    assert relay.call("PUT", "/__control/faults", {})[0] == 204


def case_unavailable(relay, token): outage_expect(relay, token, 503, "UNAVAILABLE", "UNAVAILABLE")
def case_internal(relay, token): outage_expect(relay, token, 500, "INTERNAL", "INTERNAL")


def case_third_party_auth(relay, token):
    # Not simulated: an iOS token is delivered through FCM without an APNs credential of the project.
    device = relay.device("ios")
    assert send(relay, {"token": device, "notification": {"title": "t"}}, token=token)[0] == 200


def case_no_credentials(relay, token):
    expect(send(relay, {"token": relay.device("android")}), 401, "UNAUTHENTICATED")


def case_invalid_credentials(relay, token):
    code, answer = send(relay, {"token": relay.device("android")}, token="ya29.never-issued")
    expect((code, answer), 401, "UNAUTHENTICATED")
    assert answer["error"]["details"] == [], answer


def case_access_token_expired(relay, token):
    device = relay.device("android")
    assert send(relay, {"token": device, "data": {"a": "1"}}, token=token)[0] == 200
    relay.advance(3600)
    expect(send(relay, {"token": device, "data": {"a": "2"}}, token=token), 401, "UNAUTHENTICATED", reason="ACCESS_TOKEN_EXPIRED")
    # firebase-admin, unchanged, gets through it: its session refreshes the token on the 401 and sends again.
    messaging._MessagingService.FCM_URL = relay.url + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(credentials.Certificate(account(relay, "proj-a")), name=f"conformance-{next(_apps)}")
    try:
        messaging.send(messaging.Message(fid=device, data={"a": "3"}), app=app)
        relay.advance(7200)
        assert relay.call("DELETE", "/__control/requests")[0] == 204
        messaging.send(messaging.Message(fid=device, data={"a": "4"}), app=app)
        _, journal = relay.call("GET", "/__control/requests?limit=100")
        seen = [(entry["method"], entry["path"].split("/")[-1], entry["status"]) for entry in reversed(journal["requests"])]
        sends = [status for method, path, status in seen if path == "messages:send"]
        assert sends == [401, 200] and ("POST", "token", 200) in seen, seen
    finally:
        firebase_admin.delete_app(app)


def case_permission_denied(relay, token):
    device = relay.device("android")
    expect(send(relay, {"token": device, "data": {"a": "b"}}, project="proj-b", token=token), 403, "PERMISSION_DENIED",
           reason="IAM_PERMISSION_DENIED")
    _, view = relay.call("GET", f"/__control/devices/{device}")
    assert view["delivered"] == 0 and view["pending"] == [], view


def case_one_target(relay, token):
    device = relay.device("android")
    expect(send(relay, {"data": {"a": "b"}}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
    expect(send(relay, {"token": device, "topic": "news"}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")


def case_reserved_keys(relay, token):
    device = relay.device("android")
    for key in ("from", "message_type", "google.sent_time", "gcm.notification.title", "google.c.a.e"):
        expect(send(relay, {"token": device, "data": {key: "x"}}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
        expect(send(relay, {"token": device, "android": {"data": {key: "x"}}}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
    # Near misses are ordinary keys.
    for key in ("fromage", "googleplex", "gcmx", "message_types"):
        assert send(relay, {"token": device, "data": {key: "x"}}, token=token)[0] == 200, key
    _, view = relay.call("GET", f"/__control/devices/{device}")
    assert len(view["pending"]) == 4, view  # only the four accepted messages wait for the (offline) device


def case_string_values(relay, token):
    expect(send(relay, {"token": relay.device("android"), "data": {"a": 1}}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")


def case_payload_size(relay, token):
    expect(send(relay, {"token": relay.device("android"), "data": {"a": "x" * 4100}}, token=token), 400, "INVALID_ARGUMENT",
           "INVALID_ARGUMENT")


def case_ttl(relay, token):
    expect(send(relay, {"token": relay.device("android"), "android": {"ttl": "10m"}}, token=token), 400, "INVALID_ARGUMENT",
           "INVALID_ARGUMENT")


def case_priority(relay, token):
    expect(send(relay, {"token": relay.device("android"), "android": {"priority": "urgent"}}, token=token), 400, "INVALID_ARGUMENT",
           "INVALID_ARGUMENT")


def case_topic_name(relay, token):
    expect(send(relay, {"topic": "a b"}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")


def case_condition(relay, token):
    six = " || ".join(f"'t{i}' in topics" for i in range(6))
    expect(send(relay, {"condition": six}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
    expect(send(relay, {"condition": "!" * 50000 + "'a' in topics"}, token=token), 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")


CASES = {
    "UNSPECIFIED_ERROR": case_unspecified, "INVALID_ARGUMENT": case_invalid_argument, "UNREGISTERED": case_unregistered,
    "SENDER_ID_MISMATCH": case_sender_id_mismatch, "QUOTA_EXCEEDED": case_quota_exceeded, "UNAVAILABLE": case_unavailable,
    "INTERNAL": case_internal, "THIRD_PARTY_AUTH_ERROR": case_third_party_auth,
    "UNAUTHENTICATED (no credentials)": case_no_credentials, "UNAUTHENTICATED (invalid)": case_invalid_credentials,
    "ACCESS_TOKEN_EXPIRED": case_access_token_expired, "IAM_PERMISSION_DENIED": case_permission_denied,
    "one target": case_one_target, "reserved data keys": case_reserved_keys, "data values are strings": case_string_values,
    "payload size": case_payload_size, "android.ttl": case_ttl, "android.priority": case_priority, "topic name": case_topic_name,
    "condition": case_condition,
}
TABLES = tables()["fcm"]
ROWS = TABLES["error_codes"] + TABLES["authentication"] + TABLES["rules"]


def test_every_row_has_a_case():
    check_every_row_has_a_case(ROWS, CASES, "FCM")


@pytest.mark.parametrize("row", ROWS, ids=[row["name"] for row in ROWS])
def test_row(row, relay):
    CASES[row["name"]](relay, bearer(relay))
