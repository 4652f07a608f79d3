"""Beiwe phones under Locust (`pip install "./python[locust]"`).

    locust -f examples/locust/locustfile.py --host http://127.0.0.1:SERVER --headless -u 50 -r 10 -t 1m
    locust -f examples/locust/locustfile.py --host http://127.0.0.1:SERVER --master --expect-workers 2 --headless -u 50 -r 10 -t 1m
    locust -f examples/locust/locustfile.py --worker        # on each worker machine, with --master-host
    # a server without the trio's admin API: --participants-file load-participants.json (survey-cli load setup's file)

Each process makes its own study and participants through the trio's admin API (`--participants`, default 100).
`--relay-url` gives phones their tokens from the relay, and is where `Device` sends and receives its pushes.
"""
from locust import between

from survey_trio.locust import BeiwePhone, RelayDevice


class Phone(BeiwePhone):
    """Downloads, heartbeats and uploads in the default 3:2:1 mix, with half a second to a second and a half between."""

    wait_time = between(0.5, 1.5)
    weight = 4


class Device(RelayDevice):
    """One device for every four phones: a push through the relay's FCM API, timed to its arrival on the stream, acked."""

    weight = 1
