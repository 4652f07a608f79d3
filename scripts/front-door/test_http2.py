"""HTTP/2 on every listener that speaks it (issue 49): answers end their stream on their last frame, as APNs does;
silent connections and never-ending streams meet the same deadlines as HTTP/1 (`--idle-timeout`,
`--request-timeout`); connections a client closes are closed (none left in CLOSE-WAIT); nghttp2's h2load finds no
failure on the TLS port.
"""
import os
import shutil
import socket
import ssl
import subprocess
import time
from urllib.parse import urlparse

import pytest

from conftest import TOKEN, launch
from wire import H2, PROTOCOLS, connect, is_h2, speaks

AUTH = [("authorization", f"Bearer {TOKEN}")]


def h2_listeners(fleet):
    kind = lambda url: "proxy" if url in fleet.proxies else urlparse(url).scheme
    return [(url, protocol) for url in fleet.listeners for protocol in PROTOCOLS[kind(url)]
            if is_h2(protocol) and speaks(url, protocol)]


def test_answers_end_their_stream_on_their_last_frame(fleet):
    pairs = h2_listeners(fleet)
    assert len(pairs) >= 4, pairs  # two relays (h2c, TLS h2 with and without ALPN)
    for url, protocol in pairs:
        c = H2(url, protocol)
        # A body: HEADERS, then DATA frames, the last non-empty one with END_STREAM; never an empty DATA frame.
        status, frames = c.request("GET", "/__control/health", AUTH)
        assert status == 200 and frames[0] == ("HEADERS", False) and frames[-1][0] == "DATA" and frames[-1][2], (url, protocol, frames)
        assert all(frame[1] > 0 for frame in frames if frame[0] == "DATA"), (url, protocol, frames)
        # No body: one HEADERS frame with END_STREAM.
        status, frames = c.request("DELETE", "/__control/requests", AUTH)
        assert status == 204 and frames == [("HEADERS", True)], (url, protocol, status, frames)
        # An APNs refusal (400 BadDeviceToken), a 404: the JSON body ends the stream.
        for method, path in (("POST", "/3/device/" + "00" * 32), ("GET", "/no/such/route")):
            status, frames = c.request(method, path, [("content-type", "application/json")], b'{"aps":{}}' if method == "POST" else b"")
            assert status in (400, 404, 405, 410) and frames[-1][0] == "DATA" and frames[-1][2], (url, protocol, path, frames)
            assert all(frame[1] > 0 for frame in frames if frame[0] == "DATA"), (url, protocol, path, frames)
        c.close()


@pytest.fixture
def strict_deadlines():
    process, ready = launch(["push-relay", "--idle-timeout", "3", "--request-timeout", "2"])
    yield process, ready
    process.terminate()
    process.wait(timeout=10)


def health_latency(url):
    """Seconds for one GET /__control/health on a new HTTP/1.1 connection."""
    parts = urlparse(url)
    started = time.time()
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        sock.sendall(b"GET /__control/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        while sock.recv(65536):
            pass
    return time.time() - started


def closed_by_server(sock, within):
    sock.settimeout(0.2)
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            continue
        except (OSError, ssl.SSLError):
            return True
    return False


def test_silent_connections_and_endless_streams_meet_the_deadlines(strict_deadlines):
    process, ready = strict_deadlines
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    silent = []
    # 200 connections that say nothing after the preface: 100 h2c, 100 TLS (ALPN h2).
    for _ in range(100):
        sock = connect(ready["url"], "h2c")
        sock.sendall(preface)
        silent.append(sock)
    for _ in range(100):
        sock = connect(ready["tls_url"], "tls-h2")
        sock.sendall(preface)
        silent.append(sock)
    opened = time.time()
    slowest = max(health_latency(ready["url"]) for _ in range(10))
    assert slowest < 1.0, f"health took {slowest:.2f} s beside 200 silent HTTP/2 connections"
    print(f"health beside 200 silent HTTP/2 connections: slowest of 10 {slowest * 1000:.1f} ms")
    # Streams whose body never ends: 408 within the request timeout, on the stream (the connection lives on).
    endless = []
    for protocol, url in (("h2c", ready["url"]), ("tls-h2", ready["tls_url"])):
        c = H2(url, protocol)
        c.open()
        stream = c.conn.get_next_available_stream_id()
        c.conn.send_headers(stream, [(":method", "POST"), (":path", "/v1/projects/p/messages:send"), (":scheme", "http"),
                                     (":authority", "127.0.0.1"), ("content-type", "application/json")])
        c.conn.send_data(stream, b"{")
        c.sock.sendall(c.conn.data_to_send())
        endless.append((c, stream, time.time()))
    for c, stream, started in endless:
        import h2.events
        status, ended = None, False
        c.sock.settimeout(5)
        while not ended:
            for event in c.conn.receive_data(c.sock.recv(65536)):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                if isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                    ended = True
        elapsed = time.time() - started
        assert status == 408 and 1.5 < elapsed < 4, (c.protocol, status, elapsed)
        print(f"endless stream on {c.protocol}: {status} after {elapsed:.2f} s (--request-timeout 2)")
        c.close()
    # Every silent connection is closed by the relay at the idle timeout (3 s), none later than a second after it.
    for sock in silent:
        assert closed_by_server(sock, max(0.1, opened + 4.5 - time.time())), "a silent HTTP/2 connection outlived --idle-timeout"
        sock.close()


def test_connections_closed_by_their_clients_are_closed(strict_deadlines):
    process, ready = strict_deadlines
    descriptors = lambda: len(os.listdir(f"/proc/{process.pid}/fd"))
    before = descriptors()
    for url, protocol in ((ready["url"], "h2c"), (ready["tls_url"], "tls-h2"), (ready["tls_url"], "tls-noalpn-h2")):
        for _ in range(50):
            c = H2(url, protocol)
            assert c.request("GET", "/__control/health")[0] == 200
            c.sock.shutdown(socket.SHUT_WR) if protocol == "h2c" else None
            c.close()
    time.sleep(0.5)
    after = descriptors()
    assert after <= before + 2, f"{after - before} descriptors left open by 150 closed HTTP/2 connections (CLOSE-WAIT)"


def test_h2load_against_the_tls_port(fleet):
    h2load = shutil.which("h2load")
    assert h2load, "h2load (Debian's nghttp2-client) is installed by scripts/apitest"
    relay = next(ready for ready in fleet.ready if ready.get("service") == "push-relay")
    result = subprocess.run([h2load, "-n", "2000", "-c", "4", "-m", "20", "-H", f"authorization: Bearer {TOKEN}",
                             relay["tls_url"] + "/__control/health"], capture_output=True, text=True, timeout=120)
    summary = [line for line in result.stdout.splitlines() if line.startswith(("requests:", "status codes:", "finished in"))]
    print("\n".join(summary))
    assert "2000 succeeded, 0 failed, 0 errored, 0 timeout" in result.stdout, result.stdout
    assert "status codes: 2000 2xx" in result.stdout, result.stdout
