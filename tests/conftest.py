"""Test-wide fixtures: the anyio backend, a home directory of the run's own, and an isolated data directory and
config per test.

No test writes outside its temporary directories: besides the MCP_SECTIONS_* variables, HOME and the XDG base
directories point into the run's temporary directory for the whole session, so whatever finds the user's
directories on its own — a server started with only the MCP SDK's default environment (which keeps HOME), a
third-party section the gateway starts, platformdirs' defaults, Chromium's profile files, ONNX Runtime's
device id, npm's and pip's caches — writes there (tests/framework/test_no_writes_outside.py checks it).
"""

from __future__ import annotations

import atexit
import gc
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

#: The user's directories a program may write to, and where each goes under the run's home.
USER_DIRECTORIES = {
    "HOME": ".",
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
    "XDG_RUNTIME_DIR": "runtime",
}


@pytest.hookimpl(optionalhook=True)  # a run without xdist (-p no:xdist) has no such hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (what `make test` runs): one worker per core, plus one. A worker spends about a fifth of its time
    waiting (servers starting, timers, subprocesses, the package index); the extra worker fills that time. On 2
    cores, the same 1,702 tests took 153-168 s with 3 workers and 178-185 s with 2 (alternating runs)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """An xdist worker's heap is frozen once pytest is done with it: the interpreter's own collections at exit then
    skip it. The run ends when its last worker has exited, and on 2 cores the last one's final collections took
    3-5 s after its last test."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        atexit.register(gc.freeze)


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Iterator[None]:
    """Collection keeps the test modules pytest rewrote, whatever PYTHONDONTWRITEBYTECODE says (CI sets it).
    Every xdist worker imports every test module, and rewriting their asserts costs about 3 s of CPU per worker
    (pytest 9.2, 118 modules); with the rewritten modules kept, a worker that reaches one after another worker
    loads it instead of rewriting it again, and the next run on the same checkout rewrites none."""
    kept = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = kept


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """asyncio for every `@pytest.mark.anyio` test and async fixture: session-scoped, so that a fixture of any scope
    (a module's server) may be async; no test module defines its own."""
    return "asyncio"


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run, xdist's workers included: derived files (ONNX exports, each built
    under a file lock and renamed into place) are made once, not per test or per worker."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's own directory, above the workers' (popen-gw0, popen-gw1, …)
    cache = base / "cache"
    cache.mkdir(exist_ok=True)
    return cache


def isolate(patch: pytest.MonkeyPatch, base: Path, cache_dir: Path) -> Path:
    """Data under `base`, an empty config file there, the shared cache, no roots from the environment."""
    (base / "absent-config.toml").write_text("", encoding="utf-8")
    patch.setenv("MCP_SECTIONS_DATA_DIR", str(base / "data"))
    patch.setenv("MCP_SECTIONS_CACHE_DIR", str(cache_dir))
    patch.setenv("MCP_SECTIONS_CONFIG", str(base / "absent-config.toml"))
    patch.delenv("MCP_SECTIONS_ROOTS", raising=False)
    return base / "data"


def isolate_home(patch: pytest.MonkeyPatch, home: Path) -> None:
    """HOME and the XDG base directories under `home` (a browser build Playwright downloaded stays found)."""
    if "PLAYWRIGHT_BROWSERS_PATH" not in os.environ:
        downloaded = Path.home() / ".cache" / "ms-playwright"
        if downloaded.is_dir():
            patch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(downloaded))
    for name, relative in USER_DIRECTORIES.items():
        path = home / relative
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        patch.setenv(name, str(path.resolve()))


@pytest.fixture(scope="session", autouse=True)
def isolated_session_environment(tmp_path_factory: pytest.TempPathFactory, shared_cache_dir: Path) -> Iterator[None]:
    """The same isolation for fixtures wider than a test (module-scoped servers start before `isolated_environment`),
    and the run's own home directory."""
    with pytest.MonkeyPatch.context() as patch:
        isolate_home(patch, tmp_path_factory.mktemp("home"))
        isolate(patch, tmp_path_factory.mktemp("session"), shared_cache_dir)
        yield


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache_dir: Path) -> Path:
    """No test reads the developer's config or writes to their data or cache directory."""
    return isolate(monkeypatch, tmp_path, shared_cache_dir)


#: How long each test module took in a whole run (`pytest -n auto … --record-durations` rewrites it). Only the order
#: of the modules comes from it: a stale or missing entry changes when a module starts, never what it checks.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test module's time in this run to {DURATIONS.name} (kept for modules that did not run)",
    )


def module_of(nodeid: str) -> str:
    """The test module a node id belongs to, as the durations are keyed: `tests/x/test_y.py`."""
    return nodeid.split("::")[0]


def recorded_durations() -> dict[str, float]:
    try:
        return {str(module): float(seconds) for module, seconds in json.loads(DURATIONS.read_text("utf-8")).items()}
    except (OSError, ValueError, TypeError, AttributeError):  # no file, or not {module: seconds}
        return {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, by their recorded durations; a module without one (new) before them all, since it
    may be long. `make test` hands whole modules to xdist's workers in this order (`--dist loadfile
    --no-loadscope-reorder`): the long ones start at once and the run ends on short ones on every worker, instead of
    one worker finishing a long module alone while the others wait."""
    durations = recorded_durations()
    items.sort(key=lambda item: -durations.get(module_of(item.nodeid), math.inf))


class DurationRecorder:
    """Sums each module's setup, call and teardown times (module-scoped fixtures included) as the reports arrive,
    in the xdist controller or a serial run, and merges them into DURATIONS at the end (dropping deleted modules)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = module_of(report.nodeid)
        self.seconds[module] = self.seconds.get(module, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        merged = recorded_durations() | {module: round(total, 1) for module, total in self.seconds.items()}
        kept = {module: seconds for module, seconds in merged.items() if (session.config.rootpath / module).is_file()}
        DURATIONS.write_text(json.dumps(dict(sorted(kept.items())), indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("record_durations", False) and not os.environ.get("PYTEST_XDIST_WORKER"):
        config.pluginmanager.register(DurationRecorder(), "module-durations")
