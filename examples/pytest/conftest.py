"""Helpers of the example suite, written only from the repository's docs: the JSON schemas the device lines follow.

The `trio` fixture is the survey-trio plugin's (python/, `pip install ./python`).
"""
import json
from pathlib import Path

from jsonschema import Draft202012Validator

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
EVENT_SCHEMA = Draft202012Validator(json.loads((DOCS / "device-event.schema.json").read_text()))
STATUS_SCHEMA = Draft202012Validator(json.loads((DOCS / "device-status.schema.json").read_text()))


def checked_events(text):
    """The JSON lines a device command printed, each validated against docs/schemas/device-event.schema.json."""
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        EVENT_SCHEMA.validate(line)
    return lines


# The trio itself comes from the survey-trio pytest plugin (`pip install ./python`): its session fixture `trio` starts
# `survey-cli up --parent-pid <pytest's pid>` and hands out `trio.admin`, `trio.control`, `trio.devices` and
# `trio.device(...)`. The binaries are found in --trio-bin-dir, $TRIO_BIN_DIR, or on PATH.
from survey_trio import binary  # noqa: E402,F401  (the tests import it from here)
