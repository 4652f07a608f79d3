"""Proxy mode (issue 53, PROTOCOL.md §9): a backend's push code reaches the relay unchanged, only its environment
differs. The relay is an HTTPS proxy for exactly the push providers' hosts: CONNECT to fcm.googleapis.com,
oauth2.googleapis.com, api.push.apple.com, ... is answered by the relay itself (TLS with a certificate for that name
from its CA), anything else is refused, and nothing is ever forwarded (scripts/apitest runs this).

The environment each client needed is in each test: HTTPS_PROXY and the CA bundle variable its runtime reads.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import urllib.request

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

BIN = os.environ.get("TRIO_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".build", "debug"))


class Relay:
    def __init__(self, *arguments):
        self.process = subprocess.Popen([os.path.join(BIN, "push-relay"), "--port", "0", "--parent-pid", str(os.getpid()), *arguments],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready = json.loads(self.process.stdout.readline().decode().split(" ", 1)[1])
        self.url, self.proxy = ready["url"], ready["proxy_url"]

    def call(self, method, path, body=None):
        request = urllib.request.Request(self.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def device(self, platform, app_id="org.example.app"):
        return self.call("POST", "/v1/devices", {"platform": platform, "app_id": app_id})[1]["token"]

    def pending(self, token):
        return [m["payload"] for m in self.call("GET", f"/__control/devices/{token}")[1]["pending"]]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def relay(tmp_path):
    started = Relay()
    started.ca = tmp_path / "relay-ca.pem"
    with urllib.request.urlopen(started.url + "/__control/tls/ca.pem") as response:
        started.ca.write_bytes(response.read())
    yield started
    started.stop()


def curl(relay, *arguments):
    result = subprocess.run(["curl", "-s", "-x", relay.proxy, "--cacert", str(relay.ca), "-w", "\n%{http_code} %{http_version}", *arguments],
                            capture_output=True, text=True, timeout=30)
    body, _, status = result.stdout.rpartition("\n")
    return status, body


def test_curl_reaches_fcm_and_apns_through_the_proxy(relay):
    """curl with -x (or HTTPS_PROXY) and the relay's CA: HTTP/2 and HTTP/1.1, FCM and APNs, each delivered."""
    android, ios = relay.device("android"), relay.device("ios")
    for version in ("--http2", "--http1.1"):
        status, body = curl(relay, version, "https://fcm.googleapis.com/v1/projects/p/messages:send", "-H", "content-type: application/json",
                            "-d", json.dumps({"message": {"token": android, "data": {"via": version}}}))
        assert status == ("200 2" if version == "--http2" else "200 1.1"), (status, body)
        status, body = curl(relay, version, f"https://api.push.apple.com/3/device/{ios}", "-H", "apns-topic: org.example.app",
                            "-d", json.dumps({"aps": {"alert": version}}))
        assert status.startswith("200"), (status, body)
    assert relay.pending(android) == [{"via": "--http2"}, {"via": "--http1.1"}]
    # APNs keeps one notification per app for an offline device: the newer replaced the older.
    assert [p["aps"]["alert"] for p in relay.pending(ios)] == ["--http1.1"]
    # The journal shows each proxied request like any other.
    _, journal = relay.call("GET", "/__control/requests?limit=50")
    paths = [entry["path"] for entry in journal["requests"]]
    assert paths.count("/v1/projects/p/messages:send") == 2 and paths.count(f"/3/device/{ios}") == 2, paths


def test_anything_else_is_refused_and_nothing_is_forwarded(relay):
    for target in ("example.com:443", "fcm.googleapis.com:80", "127.0.0.1:22", "www.googleapis.com:443"):
        result = subprocess.run(["curl", "-s", "-v", "-x", relay.proxy, f"https://{target}/"], capture_output=True, text=True, timeout=30)
        assert "HTTP/1.1 403" in result.stderr, (target, result.stderr[-500:])
    # A plain proxy request (absolute form) is not forwarded either.
    result = subprocess.run(["curl", "-s", "-x", relay.proxy, "-o", "/dev/null", "-w", "%{http_code}", "http://example.com/"],
                            capture_output=True, text=True, timeout=30)
    assert result.stdout == "405", result.stdout


FIREBASE = textwrap.dedent("""
    import sys
    import firebase_admin
    from firebase_admin import credentials, messaging
    app = firebase_admin.initialize_app(credentials.Certificate(sys.argv[1]))
    print(messaging.send(messaging.Message(fid=sys.argv[2], data={"from_backend": "unchanged"}), app=app))
""")


@pytest.mark.parametrize("account", ["relay", "own"])
def test_firebase_admin_unchanged_with_only_the_environment(relay, tmp_path, account):
    """firebase-admin, not one attribute patched, in a process of its own whose environment has HTTPS_PROXY and
    REQUESTS_CA_BUNDLE (what Python's requests, and so google-auth, read): its OAuth2 exchange goes to
    oauth2.googleapis.com and its send to fcm.googleapis.com, both answered by the relay. With the relay's service
    account (token_uri google), and with the user's own file (any RSA key: lenient mode takes it on trust)."""
    token = relay.device("android")
    if account == "relay":
        with urllib.request.urlopen(relay.url + "/__control/fcm/service-account.json?project_id=proxied&token_uri=google") as response:
            service_account = json.load(response)
    else:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        service_account = {
            "type": "service_account", "project_id": "proxied", "private_key_id": "ownkey123",
            "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()).decode(),
            "client_email": "backend@proxied.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": "https://oauth2.googleapis.com/token"}
    path = tmp_path / "service-account.json"
    path.write_text(json.dumps(service_account))
    environment = {**os.environ, "HTTPS_PROXY": relay.proxy, "REQUESTS_CA_BUNDLE": str(relay.ca), "NO_PROXY": ""}
    result = subprocess.run([sys.executable, "-c", FIREBASE, str(path), token], capture_output=True, text=True, timeout=60, env=environment)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("projects/proxied/messages/"), result.stdout
    assert relay.pending(token) == [{"from_backend": "unchanged"}]
    _, journal = relay.call("GET", "/__control/requests?limit=50")
    assert {"/token", "/v1/projects/proxied/messages:send"} <= {entry["path"] for entry in journal["requests"]}


def test_an_apns_client_that_honours_proxies(relay):
    """httpx with HTTP/2 (as APNs requires), through the proxy to api.push.apple.com, trusting the relay's CA."""
    import ssl
    import httpx
    token = relay.device("ios")
    with httpx.Client(http2=True, proxy=relay.proxy, verify=ssl.create_default_context(cafile=str(relay.ca))) as client:
        answer = client.post(f"https://api.push.apple.com/3/device/{token}", json={"aps": {"alert": "proxied"}},
                             headers={"apns-topic": "org.example.app", "apns-push-type": "alert"})
        assert answer.status_code == 200 and answer.http_version == "HTTP/2", (answer.status_code, answer.http_version)
        assert answer.headers["apns-id"]
        wrong = client.post(f"https://api.push.apple.com/3/device/{token}", json={"aps": {}}, headers={"apns-topic": "org.other.app"})
        assert wrong.status_code == 400 and wrong.json() == {"reason": "DeviceTokenNotForTopic"}
    assert [p["aps"]["alert"] for p in relay.pending(token)] == ["proxied"]


def test_a_go_standard_library_backend(relay, tmp_path):
    """A program using only Go's net/http (Debian's golang-go) posting to https://fcm.googleapis.com: with HTTPS_PROXY
    and SSL_CERT_FILE set, unchanged, it reaches the relay over HTTP/2; the Go, Java and Node Admin SDKs use their
    runtime's HTTP stack the same way."""
    go = shutil.which("go")
    assert go, "go (Debian's golang-go) is installed by scripts/apitest"
    token = relay.device("android")
    source = os.path.join(os.path.dirname(__file__), "go-sender", "main.go")
    environment = {**os.environ, "HTTPS_PROXY": relay.proxy, "SSL_CERT_FILE": str(relay.ca), "NO_PROXY": "",
                   "GOCACHE": str(tmp_path / "gocache"), "GOPATH": str(tmp_path / "gopath"), "GOFLAGS": "-mod=mod", "GO111MODULE": "off"}
    result = subprocess.run([go, "run", source, "proxied", token], capture_output=True, text=True, timeout=180, env=environment)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("400 HTTP/2.0") and "INVALID_ARGUMENT" in lines[0], lines
    assert lines[1].startswith("200 HTTP/2.0") and "projects/proxied/messages/" in lines[1], lines
    assert relay.pending(token) == [{"sender": "go"}]


@pytest.fixture
def strict(tmp_path):
    """A relay in strict mode (a send needs a bearer from its /token), its CA, and its service account with Google's
    token URI: what a backend in Java or Node, written as its Admin SDK is, gets from the test."""
    relay = Relay("--provider-auth", "strict")
    try:
        relay.ca = tmp_path / "relay-ca.pem"
        with urllib.request.urlopen(relay.url + "/__control/tls/ca.pem") as response:
            relay.ca.write_bytes(response.read())
        relay.account = tmp_path / "service-account.json"
        with urllib.request.urlopen(relay.url + "/__control/fcm/service-account.json?project_id=proxied&token_uri=google") as response:
            relay.account.write_bytes(response.read())
        yield relay
    finally:
        relay.stop()


def assert_sent_through_the_proxy(relay, token, result, sender):
    assert result.returncode == 0, (result.stdout, result.stderr[-2000:])
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "token 200" and lines[1].startswith("send 200") and "projects/proxied/messages/" in lines[1], lines
    assert relay.pending(token) == [{"sender": sender}]
    _, journal = relay.call("GET", "/__control/requests?limit=50")
    assert {"/token", "/v1/projects/proxied/messages:send"} <= {entry["path"] for entry in journal["requests"]}


def test_a_java_standard_library_backend(strict, tmp_path):
    """A program using only Java's standard library as the Java Admin SDK does (google-auth's service-account flow,
    then the send, over HttpsURLConnection), against a relay in strict mode: with -Dhttps.proxyHost/-Dhttps.proxyPort
    and a trust store holding the relay's CA (keytool), unchanged, it gets its access token from oauth2.googleapis.com
    and delivers through fcm.googleapis.com, both answered by the relay."""
    java, keytool = shutil.which("java"), shutil.which("keytool")
    assert java and keytool, "java and keytool (Debian's openjdk-17-jdk-headless) are installed by scripts/apitest"
    store = tmp_path / "relay.p12"
    subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "relay", "-file", str(strict.ca), "-keystore", str(store),
                    "-storetype", "PKCS12", "-storepass", "changeit"], check=True, capture_output=True, timeout=60)
    token = strict.device("android")
    host, port = strict.proxy.rsplit("/", 1)[1].rsplit(":", 1)
    source = os.path.join(os.path.dirname(__file__), "java-sender", "Sender.java")
    result = subprocess.run([java, f"-Dhttps.proxyHost={host}", f"-Dhttps.proxyPort={port}", f"-Djavax.net.ssl.trustStore={store}",
                             "-Djavax.net.ssl.trustStorePassword=changeit", source, str(strict.account), token],
                            capture_output=True, text=True, timeout=180)
    assert_sent_through_the_proxy(strict, token, result, "java")


def test_a_node_backend_with_a_proxy_agent(strict):
    """A program using only Node's core modules as the Node Admin SDK does (the token exchange, then the send, each an
    https.request through the agent the app gives: firebase-admin's httpAgent), against a relay in strict mode: with
    NODE_EXTRA_CA_CERTS naming the relay's CA and HTTPS_PROXY read by the agent (Node before 24 has no proxy of its own
    for https), it reaches oauth2.googleapis.com and fcm.googleapis.com, both answered by the relay."""
    node = shutil.which("node")
    assert node, "node (Debian's nodejs) is installed by scripts/apitest"
    token = strict.device("android")
    source = os.path.join(os.path.dirname(__file__), "node-sender", "sender.js")
    environment = {**os.environ, "HTTPS_PROXY": strict.proxy, "NODE_EXTRA_CA_CERTS": str(strict.ca)}
    result = subprocess.run([node, source, str(strict.account), token], capture_output=True, text=True, timeout=60, env=environment)
    assert_sent_through_the_proxy(strict, token, result, "node")
