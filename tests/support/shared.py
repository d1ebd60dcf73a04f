"""Work done once per test run and shared by every `pytest -n` worker (pytest-xdist).

Each worker is a process with its own session-scoped fixtures; a fixture that builds something
large (the documentation site) builds it once for the whole run with `once_per_run`, in the
run's temporary folder, under a file lock, and every worker reads the same result.
"""

from __future__ import annotations

import fcntl
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def run_folder(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: the workers' common parent under `pytest -n`.

    A worker is told by its `workerinput`, not by the environment: a child pytest that a test
    starts inherits `PYTEST_XDIST_WORKER` but is a run of its own.
    """
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created when missing) across processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def once_per_run(
    request: pytest.FixtureRequest, name: str, work: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """Run `work(folder)` once for the whole run and return `(folder, what it returned)`.

    The first worker to get here runs it in `<run folder>/<name>` and records its JSON result;
    the others wait on the lock and return the recorded result, so a failed build fails every
    test that needs it, each with the same output. `work` must return a JSON value.
    """
    shared = run_folder(request.config, request.getfixturevalue("tmp_path_factory"))
    folder = shared / name
    record = shared / f"{name}.json"
    with file_lock(shared / f"{name}.lock"):
        if not record.exists():
            result = work(folder)
            partial = shared / f"{name}.json.partial"
            partial.write_text(json.dumps(result), encoding="utf-8")
            partial.replace(record)
        return folder, json.loads(record.read_text(encoding="utf-8"))


def kept_folder(name: str) -> Path | None:
    """A folder that outlives the run, for an environment the suite installs from inputs it names.

    It lies inside the venv the suite runs in (`make clean` removes both), so the next run on
    the same machine reuses what this one installed; outside a venv there is none (`None`), and
    the environment is installed anew.
    """
    if sys.prefix == sys.base_prefix:
        return None
    folder = Path(sys.prefix) / "turnstore-test-cache" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
