"""One front door (issue 49): no guarded route answers without its token, on any listener any process prints in its
READY line, in any spelling of its path, over any protocol the listener speaks.

The relay's TLS port once answered `//__control/stats`, `/metrics/` and the FCM service account (a private key)
without the token, because the path was made canonical on the plain port only. This test does not name that port:
it reads every URL from the READY lines of every process and finds out which protocols each speaks.
"""
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import TOKEN
from wire import PROTOCOLS, client, is_h2, speaks

# Guarded routes of every process (the control planes and /metrics), some with a side effect or a secret; and every
# route of the devices API without a path parameter, read from its OpenAPI document, so a route added there is tried
# without a new line here.
DEVICES = json.loads((Path(__file__).resolve().parents[2] / "docs/openapi/survey-devices.json").read_text())["paths"]
GUARDED = ["/__admin/info", "/__admin/health", "/__admin/reset", "/__admin/requests", "/__control/health", "/__control/stats",
           "/__control/requests", "/__control/reset", "/__control/fcm/service-account.json?project_id=x", "/__control/tls/ca.pem",
           "/metrics"] + sorted(path for path in DEVICES if "{" not in path)


def spellings(target):
    """The ways a probe spells a path: doubled and trailing slashes, dot segments, encodings, case."""
    path, _, query = target.partition("?")
    suffix = "?" + query if query else ""
    name = path[1:]
    forms = [path, "/" + path, "//" + name + "/", path + "/", path + "//", "/." + path, path.replace("/", "//"),
             "/%2F" + name, "/%2f" + name, path + "/.", "/./" + name, "/x/.." + path, "/" + name.replace("_", "%5F"),
             path.upper(), "///" + name, path + "?x=/", "//" + name + "?x=//",
             # A combining mark after a slash or a `?` joins it into one Swift `Character`: text comparisons and the
             # router would read two paths (every listener refuses a byte outside visible ASCII instead).
             path[:path.rindex("/") + 1] + "\u0353" + path[path.rindex("/") + 1:], path + "?\u0353x=//"]
    return [form + suffix if "?" not in form else form for form in forms]


def protocols(url, fleet):
    kind = "proxy" if url in fleet.proxies else urlparse(url).scheme
    return [protocol for protocol in PROTOCOLS[kind] if speaks(url, protocol)]


def test_every_listener_is_found_and_speaks_its_protocols(fleet):
    """The READY lines name the servers' plain ports, the relay's TLS port and the devices API, of each process."""
    schemes = [urlparse(url).scheme for url in fleet.listeners]
    assert schemes.count("https") >= 2 and schemes.count("http") >= 6 and len(fleet.proxies) >= 2, fleet.listeners
    for url in fleet.listeners:
        spoken = protocols(url, fleet)
        if url in fleet.proxies:
            assert {"proxy-h2", "proxy-h1"} <= set(spoken), (url, spoken)
        elif url.startswith("https://"):
            assert {"tls-h1", "tls-h2", "tls-noalpn-h2", "tls-noalpn-h1"} <= set(spoken), (url, spoken)
        else:
            assert "h1" in spoken, (url, spoken)


def test_a_byte_outside_visible_ascii_is_refused_alike_on_every_listener(fleet):
    """HTTP/1.1's parser refuses a target byte outside visible ASCII; HTTP/2 carries `:path` as raw bytes, so the front
    door refuses them itself: a 400 on every listener and protocol, never a route."""
    answers = {}
    for url in fleet.listeners:
        for protocol in protocols(url, fleet):
            c = client(url, protocol)
            for target in ["/__control/\u0353stats", "/__admin/\u0353info", "/caf\u00e9", "/x?\u0353a=b"]:
                answer = c.request("GET", target, [("authorization", f"Bearer {TOKEN}")])
                answers[(url, protocol, target)] = answer[0] if is_h2(protocol) else answer
            c.close()
    wrong = {key: status for key, status in answers.items() if status != 400}
    assert not wrong, wrong
    assert len(answers) >= 4 * 20, len(answers)


def test_no_guarded_route_answers_without_its_token(fleet):
    refusals, failures, reached = 0, [], {}
    for url in fleet.listeners:
        for protocol in protocols(url, fleet):
            c = client(url, protocol)
            for target in GUARDED:
                for spelling in spellings(target):
                    for method in ("GET", "POST"):
                        body = b"{}" if method == "POST" else b""
                        answer = c.request(method, spelling, [("content-type", "application/json")], body)
                        status = answer[0] if is_h2(protocol) else answer
                        if isinstance(status, int) and 200 <= status < 400:
                            failures.append(f"{method} {url}{spelling} over {protocol} answered {status} without the token")
                        else:
                            refusals += 1
            # The same listener and protocol with the token: the guarded plane is reached (so the refusals above are
            # the guard's, not a listener that routes nowhere).
            for target in GUARDED:
                answer = c.request("GET", target, [("authorization", f"Bearer {TOKEN}")])
                status = answer[0] if is_h2(protocol) else answer
                if status == 200:
                    reached[(url, protocol)] = target
                    break
            c.close()
            assert (url, protocol) in reached, f"{url} over {protocol}: no guarded route answered 200 with the token"
    assert not failures, "\n".join(failures[:50])
    print(f"{refusals} unauthenticated requests refused over {len(reached)} listener/protocol pairs")
