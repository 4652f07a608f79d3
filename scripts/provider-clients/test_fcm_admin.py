"""firebase-admin (unchanged, from PyPI) against the relay: a backend's FCM code pointed at it with one setting.

What a backend sets (see the README, "Pointing your backend at the relay"): the service account JSON the relay
serves (its `token_uri` is the relay's OAuth2 endpoint), and firebase-admin's FCM and topic endpoints.
"""
import itertools
import json
import urllib.request

import firebase_admin
import pytest
from firebase_admin import credentials, exceptions, messaging

from conftest import Device

_apps = itertools.count()


def admin_app(relay, project="demo-project", account=None):
    """A firebase-admin app authenticated with a relay-made service account and sending to the relay."""
    messaging._MessagingService.FCM_URL = relay.url + "/v1/projects/{0}/messages:send"
    messaging._MessagingService.IID_URL = relay.url
    app = firebase_admin.initialize_app(credentials.Certificate(account or relay.service_account(project)), name=f"app-{next(_apps)}")
    messaging._get_messaging_service(app)._fcm_topic_url = f"{relay.url}/v1/projects/{project}/registrations"
    return app


def test_beiwes_android_push_arrives_with_its_android_data(relay):
    """Real Beiwe sends Android survey pushes as Message(android=AndroidConfig(data=...)); the relay dropped it."""
    app = admin_app(relay)
    device = Device(relay, "android")
    name = messaging.send(messaging.Message(
        token=device.token, data={"type": "ignored-for-android", "common": "1"},
        android=messaging.AndroidConfig(priority="high", data={"type": "survey", "survey_ids": '["s1"]', "sent_time": "t"})), app=app)
    assert name.startswith("projects/demo-project/messages/")
    push = device.next_push()
    assert push["payload"] == {"type": "survey", "survey_ids": '["s1"]', "sent_time": "t", "common": "1"}
    assert push["priority"] == 10


def test_an_ios_token_gets_the_apns_payload(relay):
    app = admin_app(relay)
    device = Device(relay, "ios")
    messaging.send(messaging.Message(
        token=device.token, data={"survey_id": "s1"}, notification=messaging.Notification(title="Survey", body="Time to answer"),
        apns=messaging.APNSConfig(headers={"apns-priority": "10"},
                                  payload=messaging.APNSPayload(aps=messaging.Aps(sound="default", badge=1), extra="x"))), app=app)
    push = device.next_push()
    assert push["payload"]["aps"] == {"alert": {"title": "Survey", "body": "Time to answer"}, "sound": "default", "badge": 1}
    assert push["payload"]["survey_id"] == "s1" and push["payload"]["extra"] == "x"
    assert push["push_type"] == "alert"


def test_a_notification_reaches_an_android_device_as_fcm_shows_it(relay):
    app = admin_app(relay)
    device = Device(relay, "android")
    messaging.send(messaging.Message(token=device.token, notification=messaging.Notification(title="T", body="B"),
                                     android=messaging.AndroidConfig(notification=messaging.AndroidNotification(title="Android T", icon="ic"))),
                   app=app)
    push = device.next_push()
    assert push["payload"]["notification"] == {"title": "Android T", "body": "B", "icon": "ic"}


def test_dry_run_validates_and_delivers_nothing(relay):
    app = admin_app(relay)
    device = Device(relay, "android")
    name = messaging.send(messaging.Message(token=device.token, data={"k": "v"}), dry_run=True, app=app)
    assert name == "projects/demo-project/messages/fake_message_id"
    assert relay.delivered(device.token) == 0
    assert relay.call("GET", f"/__control/devices/{device.token}")[1]["pending"] == []
    # A dry run still checks the token.
    with pytest.raises(exceptions.InvalidArgumentError):
        messaging.send(messaging.Message(token="not-a-relay-token", data={"k": "v"}), dry_run=True, app=app)


def test_topics_and_conditions(relay):
    app = admin_app(relay)
    news, sports, both = Device(relay, "android"), Device(relay, "android"), Device(relay, "ios")
    result = messaging.subscribe_to_topic([news.token, both.token], "news", app=app)
    assert result.success_count == 2 and result.failure_count == 0
    assert messaging.subscribe_to_topic([sports.token, both.token], "/topics/sports", app=app).success_count == 2
    messaging.send(messaging.Message(topic="news", data={"n": "1"}), app=app)
    assert news.next_push()["payload"] == {"n": "1"}
    assert both.next_push()["payload"] == {"n": "1"}
    assert relay.delivered(sports.token) == 0
    messaging.send(messaging.Message(condition="'news' in topics && 'sports' in topics", data={"n": "2"}), app=app)
    assert both.next_push()["payload"] == {"n": "2"}
    assert relay.delivered(news.token) == 1
    assert messaging.unsubscribe_from_topic([both.token], "news", app=app).success_count == 1
    messaging.send(messaging.Message(topic="news", data={"n": "3"}), app=app)
    assert news.next_push()["payload"] == {"n": "3"}
    assert relay.delivered(both.token) == 2
    # The Instance ID batch routes (firebase-admin's legacy calls) report an unknown token per token.
    legacy = messaging.subscribe_to_topic_legacy([news.token, "unknown"], "weather", app=app)
    assert legacy.success_count == 1 and legacy.failure_count == 1 and legacy.errors[0].reason == "NOT_FOUND"


def test_fid_targets_a_device_like_a_token(relay):
    app = admin_app(relay)
    device = Device(relay, "android")
    messaging.send(messaging.Message(fid=device.token, data={"via": "fid"}), app=app)
    assert device.next_push()["payload"] == {"via": "fid"}


def test_refusals_are_fcms_errors(relay):
    app = admin_app(relay)
    device = Device(relay, "android")
    with pytest.raises(exceptions.InvalidArgumentError):
        messaging.send(messaging.Message(token="not-a-relay-token", data={"k": "v"}), app=app)
    with pytest.raises(exceptions.InvalidArgumentError):
        messaging.send(messaging.Message(condition="'a' in topics &&", data={"k": "v"}), app=app)
    # An uninstalled app's token: UNREGISTERED, which firebase-admin raises as its own type.
    assert relay.call("DELETE", f"/v1/devices/{device.token}")[0] == 204
    with pytest.raises(messaging.UnregisteredError):
        messaging.send(messaging.Message(token=device.token, data={"k": "v"}), app=app)
    # An outage answering 429: QUOTA_EXCEEDED, with Retry-After.
    assert relay.call("PUT", "/__control/faults", {"outage": {"status": 429, "seconds": 30}})[0] == 204
    with pytest.raises(messaging.QuotaExceededError) as raised:
        messaging.send(messaging.Message(token=Device(relay, "android").token, data={"k": "v"}), app=app)
    assert raised.value.http_response.headers.get("Retry-After") == "1"


def test_the_journal_names_an_fcm_sends_token(relay):
    app = admin_app(relay)
    device = Device(relay, "android")
    messaging.send(messaging.Message(token=device.token, data={"k": "v"}), app=app)
    status, journal = relay.call("GET", f"/__control/requests?path=/v1/projects")
    assert status == 200
    assert [entry.get("token") for entry in journal["requests"]] == [device.token]


def test_strict_auth_takes_the_relays_tokens_only(strict_relay):
    app = admin_app(strict_relay)
    device = Device(strict_relay, "android")
    messaging.send(messaging.Message(token=device.token, data={"k": "v"}), app=app)
    assert device.next_push()["payload"] == {"k": "v"}
    # Without credentials, and with a bearer token the relay never issued: 401 UNAUTHENTICATED.
    body = {"message": {"token": device.token, "data": {"k": "v"}}}
    status, answer = strict_relay.call("POST", "/v1/projects/demo-project/messages:send", body)
    assert status == 401 and answer["error"]["status"] == "UNAUTHENTICATED"
    status, _ = strict_relay.call("POST", "/v1/projects/demo-project/messages:send", body, {"Authorization": "Bearer ya29.made-up"})
    assert status == 401


def test_a_key_the_relay_did_not_make_is_refused_in_strict_mode_and_taken_in_lenient(relay, strict_relay):
    """A service account whose key the relay never issued (here: a second relay's): `strict` refuses it at /token, as
    Google refuses a key it does not know; `lenient` (the default) takes it for the project its email names, so a
    backend's own service-account file works unchanged (PROTOCOL.md §9, proxy mode)."""
    from conftest import Relay
    other = Relay()
    try:
        foreign = other.service_account("demo-project")
        foreign["token_uri"] = strict_relay.url + "/token"
        app = admin_app(strict_relay, account=foreign)
        with pytest.raises(Exception) as raised:
            messaging.send(messaging.Message(fid=Device(strict_relay, "android").token, data={"k": "v"}), app=app)
        assert "invalid_grant" in str(raised.value) or "Invalid JWT Signature" in str(raised.value)
        foreign["token_uri"] = relay.url + "/token"
        app = admin_app(relay, account=foreign)
        device = Device(relay, "android")
        assert messaging.send(messaging.Message(fid=device.token, data={"k": "v"}), app=app).startswith("projects/demo-project/messages/")
        assert device.next_push()["payload"] == {"k": "v"}
    finally:
        other.stop()


def test_lenient_takes_no_credentials_but_refuses_wrong_ones(relay):
    device = Device(relay, "android")
    body = {"message": {"token": device.token, "data": {"k": "v"}}}
    assert relay.call("POST", "/v1/projects/p/messages:send", body)[0] == 200
    assert relay.call("POST", "/v1/projects/p/messages:send", body, {"Authorization": "Bearer wrong"})[0] == 401
    request = urllib.request.Request(relay.url + "/token", data=b"grant_type=password", method="POST")
    try:
        urllib.request.urlopen(request)
        raise AssertionError("a password grant was accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 400 and json.load(error)["error"] == "unsupported_grant_type"


def test_firebase_admin_retries_through_failures_by_count(relay):
    """`fail_next`: the next two sends answer 503 (with Retry-After); firebase-admin retries them and the third lands."""
    app = admin_app(relay)
    device = Device(relay, "android")
    assert relay.call("PUT", "/__control/faults", {"fail_next": {"count": 2, "status": 503}})[0] == 204
    messaging.send(messaging.Message(token=device.token, data={"k": "retried"}), app=app)
    assert device.next_push()["payload"] == {"k": "retried"}
    status, journal = relay.call("GET", "/__control/requests?path=/v1/projects")
    assert [entry["status"] for entry in reversed(journal["requests"])] == [503, 503, 200]
    # The fault cleared itself.
    messaging.send(messaging.Message(token=device.token, data={"k": "again"}), app=app)
    assert device.next_push()["payload"] == {"k": "again"}
