"""The SQLite session tests need no OpenAI Agents SDK (a dev dependency, for the parity tests).

A child pytest, with `agents` hidden as if it were not installed, collects every SQLite test
module, then runs the tests whose subject is the SDK: they skip, and nothing fails to import.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SQLITE_TESTS = [
    *sorted(f"tests/memory/{p.name}" for p in (ROOT / "tests/memory").glob("test_sqlite_*.py")),
    "tests/memory/test_async_sqlite_session.py",
    "tests/memory/test_settings.py",
]
ABOUT_THE_SDK = [
    "tests/memory/test_sqlite_session.py::test_a_file_written_by_the_agents_sdk_is_adopted",
    "tests/memory/test_settings.py::test_settings_object_of_another_library_is_accepted",
]
# Setting a module to None in sys.modules makes importing it raise ImportError.
WITHOUT_THE_SDK = "import sys, pytest\nsys.modules['agents'] = None\nsys.exit(pytest.main())"


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    options = ["-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_SDK, *options, *args],
        cwd=ROOT,
        env={**env, "OPENAI_AGENTS_DISABLE_TRACING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_sqlite_test_modules_import_without_the_sdk() -> None:
    assert len(SQLITE_TESTS) >= 8
    done = _pytest("--collect-only", *SQLITE_TESTS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " collected" in done.stdout


def test_the_tests_about_the_sdk_skip_without_it() -> None:
    done = _pytest("-rs", *ABOUT_THE_SDK)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(ABOUT_THE_SDK)} skipped" in done.stdout, done.stdout[-3000:]
