"""Registration alone under Locust, as `survey-cli load register` runs it (`pip install "./python[locust]"`).

    survey-cli load setup --server http://127.0.0.1:SERVER --participants 2000 --out participants.json
    locust -f examples/locust/registration.py --host http://127.0.0.1:SERVER --participants-file participants.json \
        --headless -u 8 -r 8 -t 30s

Each user registers a participant's new device again and again with no think time (each participant keeps their
password, so the list can be walked round and round). Benchmarks/scripts/pinned.py's `engines` row measures this
against the load tool, CPU per registration.
"""
from survey_trio.locust import BeiweRegistrar


class Registrar(BeiweRegistrar):
    """Registers again and again; no think time."""
