"""The survey trio for pytest: start the mock study server, the push relay and the devices API, and drive them.

`survey_trio.start()` is a context manager for any test runner; with pytest the plugin (`survey_trio.plugin`, loaded
by the `pytest11` entry point) provides the session fixture `trio`.
"""
from .isolation import Study
from .trio import API, Devices, Trio, TrioError, binary, start

__all__ = ["API", "Devices", "Study", "Trio", "TrioError", "binary", "start"]
