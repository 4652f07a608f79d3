"""APNs provider tokens against the relay, made by PyJWT (as APNs client libraries make them) over HTTP/1.1.

(APNs over HTTP/2 and TLS is not served yet: see docs/DECISIONS.md, issue 32.)
"""
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import Device


def signing_key(relay, kid):
    """A .p8-style P-256 key registered with the relay under `kid`."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert relay.call("PUT", f"/__control/apns/keys/{kid}", {"public_key": public})[0] == 204
    return key


def provider_token(key, kid, iat=None):
    return jwt.encode({"iss": "TEAMID1234", "iat": int(iat if iat is not None else time.time())}, key, algorithm="ES256",
                      headers={"kid": kid})


def push(relay, token, headers):
    return relay.call("POST", f"/3/device/{token}", {"aps": {"alert": "hi"}}, headers)


def test_strict_apns_answers_as_apple_does(strict_relay):
    device = Device(strict_relay, "ios")
    key = signing_key(strict_relay, "KEY1234567")
    topic = {"apns-topic": "org.example.app"}
    status, body = push(strict_relay, device.token, topic)
    assert (status, body["reason"]) == (403, "MissingProviderToken")
    status, body = push(strict_relay, device.token, {**topic, "authorization": "bearer not-a-jwt"})
    assert (status, body["reason"]) == (403, "InvalidProviderToken")
    other = ec.generate_private_key(ec.SECP256R1())
    status, body = push(strict_relay, device.token, {**topic, "authorization": "bearer " + provider_token(other, "KEY1234567")})
    assert (status, body["reason"]) == (403, "InvalidProviderToken")
    status, body = push(strict_relay, device.token, {**topic, "authorization": "bearer " + provider_token(key, "UNKNOWNKID")})
    assert (status, body["reason"]) == (403, "InvalidProviderToken")
    old = provider_token(key, "KEY1234567", iat=time.time() - 3700)
    status, body = push(strict_relay, device.token, {**topic, "authorization": "bearer " + old})
    assert (status, body["reason"]) == (403, "ExpiredProviderToken")
    good = "bearer " + provider_token(key, "KEY1234567")
    status, body = push(strict_relay, device.token, {"authorization": good})
    assert (status, body["reason"]) == (400, "MissingTopic")
    assert push(strict_relay, device.token, {**topic, "authorization": good})[0] == 200
    assert device.next_push()["payload"] == {"aps": {"alert": "hi"}}


def test_lenient_apns_takes_no_token_but_refuses_a_wrong_one(relay):
    device = Device(relay, "ios")
    assert push(relay, device.token, {})[0] == 200
    status, body = push(relay, device.token, {"authorization": "bearer x.y.z"})
    assert (status, body["reason"]) == (403, "InvalidProviderToken")
