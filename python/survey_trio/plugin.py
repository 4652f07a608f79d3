"""The pytest plugin: `--trio-bin-dir`, and the session fixture `trio` (one trio for the test session)."""
import pytest

from .trio import start


def pytest_addoption(parser):
    group = parser.getgroup("survey-trio")
    group.addoption("--trio-bin-dir", default=None,
                    help="directory holding survey-cli, mock-server and push-relay (default: $TRIO_BIN_DIR, then PATH)")
    group.addoption("--trio-database", default=":memory:",
                    help="the mock server's store: :memory:, a SQLite path or a postgres:// URL (default :memory:)")


@pytest.fixture(scope="session")
def trio(tmp_path_factory, pytestconfig):
    """The trio for this session: `trio.admin`, `trio.control`, `trio.devices`, `trio.device(...)`, its URLs."""
    with start(tmp_path_factory.mktemp("trio"), database=pytestconfig.getoption("trio_database"),
               bin_dir=pytestconfig.getoption("trio_bin_dir")) as running:
        yield running
