"""Requests as raw as a probe sends them, over each protocol a listener may speak: HTTP/1.1 on a socket (the path
exactly as given: no client library tidies it), HTTP/2 with prior knowledge (h2c), and TLS with ALPN `h2`, ALPN
`http/1.1`, or no ALPN at all (then HTTP/2's preface or HTTP/1.1 bytes, as aioapns and curl --no-alpn send).
"""
import socket
import ssl
from urllib.parse import urlparse

import h2.config
import h2.connection
import h2.events

PROTOCOLS = {"http": ["h1", "h2c"], "https": ["tls-h1", "tls-h2", "tls-noalpn-h2", "tls-noalpn-h1"],
             # The relay's proxy: CONNECT to a push provider's host, then TLS with ALPN h2 or http/1.1 (PROTOCOL.md §9).
             "proxy": ["proxy-h2", "proxy-h1"]}
PROXIED_HOST = "fcm.googleapis.com"


def connect(url, protocol, timeout=10):
    parts = urlparse(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
    if protocol.startswith("proxy"):
        sock.sendall(f"CONNECT {PROXIED_HOST}:443 HTTP/1.1\r\nHost: {PROXIED_HOST}:443\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            assert chunk, f"{url}: the proxy closed before answering CONNECT"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), f"{url}: CONNECT answered {answer[:40]!r}"
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.set_alpn_protocols(["h2"] if protocol == "proxy-h2" else ["http/1.1"])
        return context.wrap_socket(sock, server_hostname=PROXIED_HOST)
    if protocol.startswith("tls"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if protocol == "tls-h1":
            context.set_alpn_protocols(["http/1.1"])
        elif protocol == "tls-h2":
            context.set_alpn_protocols(["h2"])
        sock = context.wrap_socket(sock, server_hostname=parts.hostname)
        if protocol in ("tls-h1", "tls-h2"):
            expected = "http/1.1" if protocol == "tls-h1" else "h2"
            assert sock.selected_alpn_protocol() == expected, f"{url}: ALPN chose {sock.selected_alpn_protocol()}"
    return sock


def is_h2(protocol):
    return protocol in ("h2c", "tls-h2", "tls-noalpn-h2", "proxy-h2")


def authority(url, protocol):
    """The Host a request carries: the proxied provider's name through the proxy, else the listener's."""
    return PROXIED_HOST if protocol.startswith("proxy") else urlparse(url).netloc


class H1:
    """Requests on one keep-alive connection (a new one whenever the server closes it), the target sent as is."""

    def __init__(self, url, protocol):
        self.url, self.protocol = url, protocol
        self.host = authority(url, protocol)
        self.sock = None
        self.pending = b""

    def request(self, method, target, headers=(), body=b""):
        if self.sock is None:
            self.sock = connect(self.url, self.protocol)
            self.pending = b""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers]
        try:
            self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
            while b"\r\n\r\n" not in self.pending:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionResetError("closed before an answer")
                self.pending += chunk
        except (OSError, ssl.SSLError):
            self.close()
            return None
        head, _, rest = self.pending.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        fields = {line.split(":", 1)[0].strip().lower(): line.split(":", 1)[1].strip() for line in lines[1:] if ":" in line}
        length = int(fields.get("content-length", "0"))
        try:
            while len(rest) < length:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        except (OSError, ssl.SSLError):
            self.close()
            return status
        self.pending = rest[length:]
        if fields.get("connection", "").lower() == "close" or 100 <= status < 200:
            self.close()
        return status

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class H2:
    """Streams on one HTTP/2 connection (a new one whenever the server ends it)."""

    def __init__(self, url, protocol):
        self.url, self.protocol = url, protocol
        self.authority = authority(url, protocol)
        self.sock = None

    def open(self):
        self.sock = connect(self.url, self.protocol)
        # No header validation: the probe's paths are as odd as an attacker's.
        config = h2.config.H2Configuration(client_side=True, validate_outbound_headers=False, normalize_outbound_headers=False,
                                           validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config)
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())

    def request(self, method, target, headers=(), body=b""):
        """(status, frames): frames lists what came on the stream: ("HEADERS", ended) and ("DATA", length, ended)."""
        if self.sock is None:
            self.open()
        stream = self.conn.get_next_available_stream_id()
        scheme = "http" if self.protocol == "h2c" else "https"
        fields = [(":method", method), (":path", target), (":scheme", scheme), (":authority", self.authority),
                  ("content-length", str(len(body))), *headers]
        self.conn.send_headers(stream, fields, end_stream=not body)
        if body:
            self.conn.send_data(stream, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        status, frames = None, []
        while True:
            data = self.sock.recv(65536)
            if not data:
                self.sock.close()
                self.sock = None
                return status, frames
            for event in self.conn.receive_data(data):
                if getattr(event, "stream_id", stream) != stream:
                    continue
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[b":status"])
                    frames.append(("HEADERS", event.stream_ended is not None))
                elif isinstance(event, h2.events.InformationalResponseReceived):
                    frames.append(("INTERIM",))
                elif isinstance(event, h2.events.DataReceived):
                    frames.append(("DATA", len(event.data), event.stream_ended is not None))
                    self.conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded):
                    self.sock.sendall(self.conn.data_to_send())
                    return status, frames
                elif isinstance(event, h2.events.StreamReset):
                    return status or ("reset", event.error_code), frames
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.sock.close()
                    self.sock = None
                    return status, frames
            outgoing = self.conn.data_to_send()
            if outgoing:
                self.sock.sendall(outgoing)

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def client(url, protocol):
    return H2(url, protocol) if is_h2(protocol) else H1(url, protocol)


def speaks(url, protocol):
    """Whether the listener answers HTTP over `protocol` (any status counts)."""
    try:
        c = client(url, protocol)
        status = c.request("GET", "/__front-door-probe")[0] if is_h2(protocol) else c.request("GET", "/__front-door-probe")
        c.close()
        return isinstance(status, int)
    except (OSError, ssl.SSLError, AssertionError, h2.exceptions.ProtocolError):
        return False
