"""The pytest plugin: `--trio-bin-dir`, `--trio-database`, `--trio-image`, the session fixture `trio` (one trio for
the test session) and the per-test `trio_study`."""
import pytest

from .isolation import Study
from .trio import start


def pytest_addoption(parser):
    group = parser.getgroup("survey-trio")
    group.addoption("--trio-bin-dir", default=None,
                    help="directory holding survey-cli, mock-server and push-relay (default: $TRIO_BIN_DIR, then PATH)")
    group.addoption("--trio-database", default=":memory:",
                    help="the mock server's store: :memory:, a SQLite path or a postgres:// URL (default :memory:)")
    group.addoption("--trio-image", default=None,
                    help="run the trio from this container image (survey_trio.testcontainers) instead of binaries")


@pytest.fixture(scope="session")
def trio(tmp_path_factory, pytestconfig):
    """The trio for this session: `trio.admin`, `trio.control`, `trio.devices`, `trio.device(...)`, its URLs."""
    image = pytestconfig.getoption("trio_image")
    if image:
        from .testcontainers import TrioContainer  # testcontainers-python is needed only here
        with TrioContainer(image) as running:
            yield running
        return
    with start(tmp_path_factory.mktemp("trio"), database=pytestconfig.getoption("trio_database"),
               bin_dir=pytestconfig.getoption("trio_bin_dir")) as running:
        yield running


@pytest.fixture
def trio_study(trio):
    """A fresh study on the session's trio for this test alone (`survey_trio.isolation.Study`): its participants,
    devices (`trio_study.device()`), relay faults scoped to its devices (`trio_study.fault(...)`) and listings
    (`trio_study.pushes()`, `.submissions()`); its devices are removed and their faults cleared afterwards."""
    study = Study(trio, frozen_at="2026-05-04T08:59:00Z")
    yield study
    study.close()

