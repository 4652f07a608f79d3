"""Apple's APNs answers ("Handling notification responses from APNs"): a case for every row of `APNsTables`."""
import signal
import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import Relay, check_every_row_has_a_case, tables

TOPIC = "org.example.app"


class Provider:
    """A provider with a key the relay knows, making tokens as aioapns does (ES256, {alg, kid}, {iss, iat})."""

    def __init__(self, relay, kid="KEY1234567"):
        self.kid = kid
        self.key = ec.generate_private_key(ec.SECP256R1())
        public = self.key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        assert relay.call("PUT", f"/__control/apns/keys/{kid}", {"public_key": public})[0] == 204

    def token(self, iat=None, key=None, kid=None):
        return jwt.encode({"iss": "TEAMID1234", "iat": int(time.time()) if iat is None else iat}, key or self.key, algorithm="ES256",
                          headers={"kid": kid or self.kid})


def push(relay, provider, device, body=b'{"aps":{"alert":"x"}}', headers=(), token=None, method="POST", path=None):
    sent = [("authorization", f"bearer {token or provider.token()}")] if provider else []
    names = {name for name, _ in headers}
    if "apns-topic" not in names:
        sent.append(("apns-topic", TOPIC))
    status, answer, response_headers = relay.request(method, path or f"/3/device/{device}", raw=body, headers=sent + list(headers))
    return status, (answer or {}).get("reason") if isinstance(answer, dict) else None, answer, response_headers


def expect(result, status, reason):
    assert result[0] == status and result[1] == reason, result[:3]


def h2_connection(url, idle_wait=None):
    host, port = url.split("//")[1].split(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection((host, int(port))), server_hostname=host)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def goaway(sock, conn, within):
    """The GOAWAY the relay sends within `within` seconds (its error code), or None."""
    sock.settimeout(0.5)
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        if not data:
            return None
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ConnectionTerminated):
                return event.error_code
    return None


def case_bad_collapse_id(relay, p, d): expect(push(relay, p, d, headers=[("apns-collapse-id", "x" * 65)]), 400, "BadCollapseId")
def case_bad_device_token(relay, p, d): expect(push(relay, p, "zz-not-hex"), 400, "BadDeviceToken")
def case_bad_expiration(relay, p, d): expect(push(relay, p, d, headers=[("apns-expiration", "soon")]), 400, "BadExpirationDate")
def case_bad_message_id(relay, p, d): expect(push(relay, p, d, headers=[("apns-id", "not-a-uuid")]), 400, "BadMessageId")


def case_bad_priority(relay, p, d):
    expect(push(relay, p, d, headers=[("apns-priority", "7")]), 400, "BadPriority")
    expect(push(relay, p, d, body=b'{"aps":{"content-available":1}}', headers=[("apns-push-type", "background"), ("apns-priority", "10")]),
           400, "BadPriority")


def case_bad_topic(relay, p, d): expect(push(relay, p, d, headers=[("apns-topic", "org example app")]), 400, "BadTopic")


def case_token_not_for_topic(relay, p, d):
    other = relay.device(app_id="org.other.app")
    expect(push(relay, p, other), 400, "DeviceTokenNotForTopic")
    # The app's own topic, and the topics APNs derives from it, are the same app.
    for topic in ("org.other.app", "org.other.app.voip", "org.other.app.complication", "org.other.app.pushkit.fileprovider"):
        push_type = {"voip": "voip", "complication": "complication", "fileprovider": "fileprovider"}.get(topic.rsplit(".", 1)[-1], "alert")
        assert push(relay, p, other, headers=[("apns-topic", topic), ("apns-push-type", push_type)])[0] == 200, topic


def case_duplicate_headers(relay, p, d):
    expect(push(relay, p, d, headers=[("apns-priority", "10"), ("apns-priority", "5")]), 400, "DuplicateHeaders")


def case_idle_timeout(relay, p, d):
    # Difference: an idle connection is closed with GOAWAY (no error) at --idle-timeout, without the IdleTimeout reason.
    idle = Relay("--idle-timeout", "1")
    try:
        sock, conn = h2_connection(idle.tls_url)
        assert goaway(sock, conn, 3) == h2.errors.ErrorCodes.NO_ERROR
        sock.close()
    finally:
        idle.stop()


def case_invalid_push_type(relay, p, d): expect(push(relay, p, d, headers=[("apns-push-type", "nope")]), 400, "InvalidPushType")
def case_missing_device_token(relay, p, d): expect(push(relay, p, d, path="/3/device/"), 400, "MissingDeviceToken")


def case_missing_topic(relay, p, d):
    status, answer, _ = relay.request("POST", f"/3/device/{d}", raw=b'{"aps":{}}', headers=[("authorization", f"bearer {p.token()}")])
    assert status == 400 and answer["reason"] == "MissingTopic", answer


def case_payload_empty(relay, p, d): expect(push(relay, p, d, body=b""), 400, "PayloadEmpty")


def case_topic_disallowed(relay, p, d):
    # Not simulated: a key is good for every app; a push to another app's topic with the same key is delivered.
    other = relay.device(app_id="org.other.app")
    assert push(relay, p, other, headers=[("apns-topic", "org.other.app")])[0] == 200


def case_bad_certificate(relay, p, d):
    # Not simulated: the TLS port takes clients without certificates; token authentication works there.
    sock, conn = h2_connection(relay.tls_url)
    stream = conn.get_next_available_stream_id()
    host = relay.tls_url.split("//")[1]
    conn.send_headers(stream, [(":method", "POST"), (":path", f"/3/device/{d}"), (":scheme", "https"), (":authority", host),
                               ("authorization", f"bearer {p.token()}"), ("apns-topic", TOPIC)])
    conn.send_data(stream, b'{"aps":{"alert":"tls"}}', end_stream=True)
    sock.sendall(conn.data_to_send())
    status = None
    sock.settimeout(5)
    while status is None:
        for event in conn.receive_data(sock.recv(65536)):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[b":status"])
    sock.close()
    assert status == 200


def case_expired_provider_token(relay, p, d):
    expect(push(relay, p, d, token=p.token(iat=int(time.time()) - 3601)), 403, "ExpiredProviderToken")
    # The relay clock ages a token it has seen: used now, then the clock moves an hour on.
    token = p.token()
    assert push(relay, p, d, token=token)[0] == 200
    relay.advance(3601)
    expect(push(relay, p, d, token=token), 403, "ExpiredProviderToken")
    # A token made after the move is fresh.
    assert push(relay, p, d, token=p.token())[0] == 200


def case_forbidden(relay, p, d):
    # Not simulated: a well-formed push with a valid provider token is delivered, never answered Forbidden.
    assert push(relay, p, d)[0] == 200


def case_invalid_provider_token(relay, p, d):
    stranger = ec.generate_private_key(ec.SECP256R1())
    expect(push(relay, p, d, token=p.token(key=stranger)), 403, "InvalidProviderToken")
    expect(push(relay, p, d, token="not.a.jwt"), 403, "InvalidProviderToken")


def case_missing_provider_token(relay, p, d): expect(push(relay, None, d), 403, "MissingProviderToken")


def case_unrelated_key_id(relay, p, d):
    # Difference: an unknown key id is InvalidProviderToken (keys have no team here).
    expect(push(relay, p, d, token=p.token(kid="UNKNOWN123")), 403, "InvalidProviderToken")


def case_bad_path(relay, p, d):
    for path in ("/3/nodevice/x", "/3/device/a/b", "/3"):
        expect(push(relay, p, d, path=path), 404, "BadPath")


def case_method_not_allowed(relay, p, d):
    for method in ("GET", "PUT", "DELETE"):
        result = push(relay, p, d, method=method, body=b"")
        expect(result, 405, "MethodNotAllowed")
        allow = {name.lower(): value for name, value in result[3].items()}.get("allow", "")
        assert "POST" in allow, result[3]  # RFC 9110: a 405 names the methods the path takes


def case_expired_token(relay, p, d):
    # Difference: a retired token answers Unregistered (ExpiredToken is not told apart).
    assert relay.call("DELETE", f"/v1/devices/{d}")[0] == 204
    expect(push(relay, p, d), 410, "Unregistered")


def case_unregistered(relay, p, d):
    assert relay.call("DELETE", f"/v1/devices/{d}")[0] == 204
    status, reason, answer, _ = push(relay, p, d)
    assert status == 410 and reason == "Unregistered" and isinstance(answer.get("timestamp"), int), answer


def case_payload_too_large(relay, p, d):
    big = b'{"aps":{"alert":"' + b"x" * 4100 + b'"}}'
    expect(push(relay, p, d, body=big), 413, "PayloadTooLarge")
    voip = relay.device(app_id=TOPIC)
    assert push(relay, p, voip, body=big, headers=[("apns-push-type", "voip"), ("apns-topic", TOPIC + ".voip")])[0] == 200


def case_too_many_token_updates(relay, p, d):
    # Not simulated: a new provider token for every request is taken.
    for second in range(3):
        assert push(relay, p, d, token=p.token(iat=int(time.time()) - second))[0] == 200


def case_too_many_requests(relay, p, d):
    limited = Relay("--device-rate", "1")
    try:
        token = limited.device()
        results = [limited.request("POST", f"/3/device/{token}", raw=b'{"aps":{}}', headers=[("apns-topic", TOPIC)])[:2] for _ in range(3)]
        assert (429, {"reason": "TooManyRequests"}) in results, results
    finally:
        limited.stop()


def outage(relay, p, d, status, reason):
    assert relay.call("PUT", "/__control/faults", {"outage": {"status": status, "seconds": 30}})[0] == 204
    expect(push(relay, p, d), status, reason)
    assert relay.call("PUT", "/__control/faults", {})[0] == 204


def case_internal_server_error(relay, p, d): outage(relay, p, d, 500, "InternalServerError")
def case_service_unavailable(relay, p, d): outage(relay, p, d, 503, "ServiceUnavailable")


def case_shutdown(relay, p, d):
    # Difference: a stopping relay sends GOAWAY with no error (and answers open streams), not the Shutdown reason.
    sock, conn = h2_connection(relay.tls_url)
    time.sleep(0.2)
    relay.process.send_signal(signal.SIGTERM)
    assert goaway(sock, conn, 3) == h2.errors.ErrorCodes.NO_ERROR
    sock.close()


CASES = {
    "BadCollapseId": case_bad_collapse_id, "BadDeviceToken": case_bad_device_token, "BadExpirationDate": case_bad_expiration,
    "BadMessageId": case_bad_message_id, "BadPriority": case_bad_priority, "BadTopic": case_bad_topic,
    "DeviceTokenNotForTopic": case_token_not_for_topic, "DuplicateHeaders": case_duplicate_headers, "IdleTimeout": case_idle_timeout,
    "InvalidPushType": case_invalid_push_type, "MissingDeviceToken": case_missing_device_token, "MissingTopic": case_missing_topic,
    "PayloadEmpty": case_payload_empty, "TopicDisallowed": case_topic_disallowed, "BadCertificate": case_bad_certificate,
    "BadCertificateEnvironment": case_bad_certificate, "ExpiredProviderToken": case_expired_provider_token, "Forbidden": case_forbidden,
    "InvalidProviderToken": case_invalid_provider_token, "MissingProviderToken": case_missing_provider_token,
    "UnrelatedKeyIdInToken": case_unrelated_key_id, "BadPath": case_bad_path, "MethodNotAllowed": case_method_not_allowed,
    "ExpiredToken": case_expired_token, "Unregistered": case_unregistered, "PayloadTooLarge": case_payload_too_large,
    "TooManyProviderTokenUpdates": case_too_many_token_updates, "TooManyRequests": case_too_many_requests,
    "InternalServerError": case_internal_server_error, "ServiceUnavailable": case_service_unavailable, "Shutdown": case_shutdown,
}
ROWS = tables()["apns"]


def test_every_row_has_a_case():
    check_every_row_has_a_case(ROWS, CASES, "APNs")


@pytest.mark.parametrize("row", ROWS, ids=[row["name"] for row in ROWS])
def test_row(row, relay):
    provider = Provider(relay)
    device = relay.device()
    CASES[row["name"]](relay, provider, device)
