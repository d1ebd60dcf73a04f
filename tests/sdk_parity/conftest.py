"""The SDK's test files run once per test run, in one child pytest, for every check here.

Each test of this folder checks one SDK file's outcomes (`sdk_run.check_file`); `sdk_results`
runs all the files of both modules together, once for all `pytest -n` workers (the first runs
it, the others read its recorded result): one interpreter, one import of the SDK and of turnstore.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from sdk_parity import test_sdk_extension_parity as extension
from sdk_parity import test_sdk_parity as session
from sdk_parity.sdk_run import run_sdk_tests, sdist
from support.shared import once_per_run


def _aiosqlite() -> bool:
    """The SDK's AsyncSQLiteSession tests import aiosqlite: without it they are not run."""
    return importlib.util.find_spec("aiosqlite") is not None


@pytest.fixture(scope="session")
def sdk_results(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The outcomes of every SDK test file of this folder (see `sdk_run.run_sdk_tests`)."""
    source = sdist()
    files = list(session.SDK_TEST_FILES)
    support = set(session.SDK_SUPPORT_FILES)
    not_run = dict(session.NOT_RUN)
    if _aiosqlite():
        files += extension.SDK_TEST_FILES
        support |= set(extension.SDK_SUPPORT_FILES)
        not_run |= extension.NOT_RUN

    def run(folder: Path) -> dict[str, Any]:
        return run_sdk_tests(source, folder, files, sorted(support), not_run)

    return once_per_run(request, "sdk_parity", run)[1]
