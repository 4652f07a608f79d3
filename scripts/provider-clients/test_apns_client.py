"""aioapns (unchanged, from PyPI) against the relay's TLS port: HTTP/2 over TLS with ALPN h2, as APNs serves it.

What a backend sets: the host and port aioapns connects to (two class attributes; aioapns has no setting for
them), and an SSL context that trusts the relay's CA (`GET /__control/tls/ca.pem`).
"""
import asyncio
import ssl
from urllib.parse import urlparse

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol, APNsTLSClientProtocol
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import Device


def apns_key(relay, kid):
    """A .p8 key (PKCS#8 PEM) whose public half the relay knows as `kid`."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert relay.call("PUT", f"/__control/apns/keys/{kid}", {"public_key": public})[0] == 204
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()


def send(relay, tmp_path, key, kid, token, message, **fields):
    tls = urlparse(relay.tls_url)
    APNsProductionClientProtocol.APNS_SERVER = tls.hostname
    APNsTLSClientProtocol.APNS_PORT = tls.port
    context = ssl.create_default_context(cafile=relay.ca_file(tmp_path))

    async def run():
        client = APNs(key=key, key_id=kid, team_id="TEAMID1234", topic="org.example.app", ssl_context=context, max_connection_attempts=1)
        return await client.send_notification(NotificationRequest(device_token=token, message=message, **fields))

    return asyncio.run(run())


def test_aioapns_delivers_over_http2_and_tls(strict_relay, tmp_path):
    key = apns_key(strict_relay, "KEY1234567")
    device = Device(strict_relay, "ios")
    result = send(strict_relay, tmp_path, key, "KEY1234567", device.token, {"aps": {"alert": {"title": "Survey"}}, "survey_id": "s1"},
                  push_type=PushType.ALERT, priority=10, collapse_key="mood")
    assert result.is_successful, result.description
    push = device.next_push()
    assert push["payload"] == {"aps": {"alert": {"title": "Survey"}}, "survey_id": "s1"}
    assert push["push_type"] == "alert" and push["collapse_id"] == "mood"


def test_aioapns_gets_apples_refusals(strict_relay, tmp_path):
    apns_key(strict_relay, "KEY1234567")
    device = Device(strict_relay, "ios")
    # A key the relay was never given: 403 InvalidProviderToken.
    stranger = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    result = send(strict_relay, tmp_path, stranger, "KEY1234567", device.token, {"aps": {"alert": "x"}})
    assert not result.is_successful and result.status == "403" and result.description == "InvalidProviderToken"
    # A token the relay never issued: 400 BadDeviceToken.
    key = apns_key(strict_relay, "KEY2")
    result = send(strict_relay, tmp_path, key, "KEY2", "00" * 32, {"aps": {"alert": "x"}})
    assert not result.is_successful and result.description == "BadDeviceToken"


def test_http2_with_prior_knowledge_on_the_plain_port(relay):
    """h2c: httpx (with h2) speaking HTTP/2 straight away to the plain port, as a provider client may in tests."""
    import httpx
    device = Device(relay, "ios")
    with httpx.Client(http1=False, http2=True) as client:
        answer = client.post(f"{relay.url}/3/device/{device.token}", json={"aps": {"alert": "h2c"}}, headers={"apns-push-type": "alert"})
        assert answer.status_code == 200 and answer.http_version == "HTTP/2"
        assert answer.headers["apns-id"]
        # Several streams on the one connection, the relay's health (answered on the connection itself) among them.
        assert client.get(f"{relay.url}/__control/health").json()["status"] == "ok"
    assert device.next_push()["payload"] == {"aps": {"alert": "h2c"}}


def test_open_tls_connections_do_not_hold_a_stop(relay):
    """SIGTERM with TLS connections open (one silent, three closed by the client after the handshake, one on h2):
    a clean stop (exit 0) within PROTOCOL.md §6's second."""
    import signal
    import socket
    import time
    tls = urlparse(relay.tls_url)
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    for _ in range(3):
        insecure.wrap_socket(socket.create_connection((tls.hostname, tls.port)), server_hostname=tls.hostname).close()
    silent = insecure.wrap_socket(socket.create_connection((tls.hostname, tls.port)), server_hostname=tls.hostname)
    time.sleep(0.2)
    started = time.time()
    relay.process.send_signal(signal.SIGTERM)
    status = relay.process.wait(timeout=5)
    assert status == 0 and time.time() - started < 1.0, (status, time.time() - started)
    silent.close()


def test_one_aioapns_client_sends_concurrently_each_once(strict_relay, tmp_path):
    """Issue 49: one aioapns client, 20 concurrent sends on its one connection to 20 live iOS tokens. The relay ended
    every HTTP/2 answer with an extra empty DATA frame, which aioapns parsed as JSON and dropped the connection on:
    4 of 20 succeeded, the devices got 1-3 copies each. Now: 20 successes, one delivery each, one POST each."""
    key = apns_key(strict_relay, "KEYCONC123")
    devices = [Device(strict_relay, "ios") for _ in range(20)]
    tls = urlparse(strict_relay.tls_url)
    APNsProductionClientProtocol.APNS_SERVER = tls.hostname
    APNsTLSClientProtocol.APNS_PORT = tls.port
    context = ssl.create_default_context(cafile=strict_relay.ca_file(tmp_path))
    assert strict_relay.call("DELETE", "/__control/requests")[0] in (200, 204)

    async def run():
        client = APNs(key=key, key_id="KEYCONC123", team_id="TEAMID1234", topic="org.example.app", ssl_context=context,
                      max_connections=1, max_connection_attempts=1)
        requests = [NotificationRequest(device_token=d.token, message={"aps": {"alert": f"n{i}"}}, push_type=PushType.ALERT)
                    for i, d in enumerate(devices)]
        return await asyncio.gather(*(client.send_notification(r) for r in requests))

    results = asyncio.run(run())
    assert [r.is_successful for r in results] == [True] * 20, [(r.status, r.description) for r in results]
    for i, device in enumerate(devices):
        assert device.next_push()["payload"] == {"aps": {"alert": f"n{i}"}}
        assert strict_relay.delivered(device.token) == 1, f"device {i} got {strict_relay.delivered(device.token)} copies"
    status, journal = strict_relay.call("GET", "/__control/requests?path=/3/device/&limit=1000")
    posts = [entry for entry in journal["requests"] if entry["method"] == "POST"]
    assert status == 200 and len(posts) == 20, f"{len(posts)} POSTs for 20 sends"
    for device in devices:
        device.close()
