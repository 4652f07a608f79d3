"""The trio's image run as users run it (scripts/container test): the docker CLI and testcontainers-python, both on
podman's Docker API (DOCKER_HOST), and podman itself for what only it shows (the HEALTHCHECK run, the process's user).

Prints the figures the closing note quotes: image size, start-to-READY and stop times.
"""
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from survey_trio import Study
from survey_trio.testcontainers import PORTS, TrioContainer

IMAGE = os.environ["TRIO_IMAGE"]
LABEL = "survey-trio.test=1"


def docker(*args, timeout=60):
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"docker {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout.strip()


def get(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture
def container():
    """A container of the image started with the docker CLI, no TRIO_TOKEN, every port published on loopback."""
    publish = [arg for port in PORTS.values() for arg in ("-p", f"127.0.0.1::{port}")]
    started = time.monotonic()
    cid = docker("run", "-d", "--label", LABEL, *publish, IMAGE)
    ready = None
    while time.monotonic() - started < 60:
        for line in docker("logs", cid).splitlines():
            if line.startswith("READY "):
                ready = json.loads(line[len("READY "):])
        if ready:
            break
        time.sleep(0.05)
    assert ready, docker("logs", cid)
    print(f"\nstart to READY: {time.monotonic() - started:.2f} s (docker run -d, then docker logs until the line)")
    yield cid, ready
    subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def mapped(cid, port):
    # "127.0.0.1:40123" (docker port prints one line per address).
    return docker("port", cid, str(port)).splitlines()[0].strip()


def test_the_image_is_small_and_declares_its_user_ports_and_healthcheck():
    info = json.loads(docker("image", "inspect", IMAGE))[0]
    config = info["Config"]
    assert config["User"] == "10001:10001"
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in PORTS.values()}
    # podman 4.3's Docker API leaves the healthcheck out of an image's Config; podman's own inspect shows the image's.
    healthcheck = json.loads(subprocess.run(["podman", "image", "inspect", IMAGE], capture_output=True, text=True,
                                            check=True).stdout)[0]["Healthcheck"]
    assert healthcheck["Test"][1:3] == ["/usr/local/bin/survey-cli", "healthcheck"], healthcheck
    assert config["Entrypoint"][:3] == ["/usr/local/bin/survey-cli", "up", "--host"]
    size = info["Size"]
    print(f"\nimage size: {size / 1024 / 1024:.1f} MiB ({len(info['RootFS']['Layers'])} layers)")
    # Three binaries with the Swift runtime, Foundation and ICU's data linked into each, and their C libraries.
    assert size < 400 * 1024 * 1024


def test_a_generated_token_guards_every_control_plane(container):
    cid, ready = container
    token = ready.get("token")
    assert token and re.fullmatch(r"[0-9a-f]{64}", token), ready
    server, relay, devices = (mapped(cid, port) for port in (4001, 4002, 4003))
    for url in (f"http://{server}/__admin/info", f"http://{relay}/__control/stats", f"http://{devices}/__devices"):
        status, body = get(url)
        assert status == 401 and body["error"]["code"] == "token_required", (url, status, body)
        status, _ = get(url, token)
        assert status == 200, (url, status)
    # The version the image's binaries report is the one it is tagged with.
    status, info = get(f"http://{server}/__admin/info", token)
    assert info["version"] == os.environ["TRIO_VERSION"], info


def test_it_runs_as_a_non_root_user_and_its_healthcheck_passes(container):
    cid, _ = container
    pid = docker("inspect", "--format", "{{.State.Pid}}", cid)
    uids = [line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:")][0].split()[1:]
    assert uids == ["10001"] * 4, uids
    # podman runs a HEALTHCHECK from systemd timers, which this machine lacks: run the image's own check once.
    result = subprocess.run(["podman", "healthcheck", "run", cid], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert docker("inspect", "--format", "{{.State.Health.Status}}", cid) == "healthy"


def test_it_stops_within_a_second_of_sigterm_as_pid_1(container):
    cid, _ = container
    started = time.monotonic()
    docker("stop", "-t", "10", cid)
    took = time.monotonic() - started
    code = docker("inspect", "--format", "{{.State.ExitCode}}", cid)
    print(f"\nstop (SIGTERM to exit): {took:.2f} s, exit code {code}")
    # The engine's own round trips are in this figure; a server ignoring SIGTERM would take the 10 s to SIGKILL.
    assert took < 3, took
    assert code == "0", code


def test_testcontainers_runs_a_study_from_creation_to_a_decrypted_answer():
    with TrioContainer(IMAGE, labels={"survey-trio.test": "1"}) as trio:
        study = Study(trio, timezone="America/New_York", frozen_at="2026-05-04T12:59:00Z")
        study.add_survey({
            "name": "Mood", "survey_type": "tracking_survey",
            "content": [{"question_id": "mood", "question_type": "slider", "question_text": "Mood?", "min": "0", "max": "10"}],
            "schedules": [{"type": "weekly", "day_of_week": 1, "hour": 9, "minute": 0}]})
        device = study.device(timezone="America/New_York", auto_answer=True, answer_value="7")
        # 09:00 in New York (13:00 UTC, daylight time) passes: the relay inside the container carries the push.
        moved = study.advance(120)
        assert moved["fired"], moved
        trio.devices.wait_for(device["device_id"], "submitted", within="30s")
        answers = study.submissions(count=1)
        assert answers[0]["answers"][0]["answer"] == "7"
        pushes = study.pushes(count=1)
        assert pushes[0]["due_at"].startswith("2026-05-04T13:00"), pushes[0]
