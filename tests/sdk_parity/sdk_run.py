"""Running the OpenAI Agents SDK's own test files on turnstore's classes.

The SDK ships its tests in its source package. `sdist` obtains that package (from a local cache,
else with `pip download`); `run_sdk_tests` extracts the wanted test files and their helper
modules, copies `sdk_conftest.py` next to them (it rebinds the SDK's session names to ours) and
runs them in one child pytest. The test modules of this folder check each file's outcomes; the
child runs once per test run for all of them (`conftest.py`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from support.services import skip_or_fail

SDK_VERSION = "0.24.0"
SDIST = f"openai_agents-{SDK_VERSION}.tar.gz"
CACHE = Path(
    os.environ.get("TURNSTORE_SDK_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "turnstore-sdk-parity"
)
# The child pytest's limit; a single test is stopped after 20 s (see `run_sdk_tests`).
RUN_TIMEOUT = 900
# How much of a failure's report, and of the child's output, a result keeps.
_REPORT_CHARS = 3000


def sdist() -> Path:
    """The SDK's source package, cached; skips (fails under TURNSTORE_REQUIRE_SERVICES=1)
    when it cannot be had."""
    cached = CACHE / SDIST
    if cached.is_file():
        return cached
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"openai-agents=={SDK_VERSION}",
            "-d",
            tmp,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        downloaded = Path(tmp) / SDIST
        if done.returncode != 0 or not downloaded.is_file():
            skip_or_fail(
                f"the OpenAI Agents SDK {SDK_VERSION} source package is not available "
                f"(pip download failed: {done.stderr.strip()[-300:]})"
            )
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = CACHE / f"{SDIST}.{os.getpid()}.partial"  # pytest -n: a worker each
        shutil.copyfile(downloaded, partial)
        partial.replace(cached)
    return cached


def _extract(source: Path, into: Path, files: Iterable[str]) -> Path:
    """Extract `files` (paths under the SDK's `tests/`) into `into`; return the project folder."""
    root = f"openai_agents-{SDK_VERSION}/tests/"
    wanted = {root + name for name in files}
    with tarfile.open(source) as archive:
        members = [m for m in archive.getmembers() if m.name in wanted]
        archive.extractall(into, members=members, filter="data")
    project = into / f"openai_agents-{SDK_VERSION}"
    tests = project / "tests"
    for folder in {(tests / name).parent for name in files}:
        while folder != project:  # every folder up to tests/ is a package
            (folder / "__init__.py").touch()
            folder = folder.parent
    shutil.copyfile(Path(__file__).with_name("sdk_conftest.py"), project / "conftest.py")
    return project


def _test_id(classname: str, name: str, files: list[str]) -> str:
    """The id (`file::name`, or `file::Class::name`) of a report's test case."""
    for file in files:
        module = "tests." + file.removesuffix(".py").replace("/", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            classes = classname[len(module) + 1 :].replace(".", "::")
            return f"{file}::{classes}::{name}"
    return f"{classname}::{name}"  # not a test of `files`: an error of the run itself


def _outcomes(report: Path, files: list[str]) -> dict[str, dict[str, str]]:
    """Each test's outcome ("passed", "failed", "skipped") and, for a failure, its report."""
    outcomes: dict[str, dict[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = _test_id(case.get("classname", ""), case.get("name", ""), files)
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is not None:
            text = f"{failure.get('message', '')}\n{failure.text or ''}"
            outcomes[test_id] = {"outcome": "failed", "report": text[-_REPORT_CHARS:]}
        elif case.find("skipped") is not None:
            outcomes[test_id] = {"outcome": "skipped"}
        else:
            outcomes[test_id] = {"outcome": "passed"}
    return outcomes


def run_sdk_tests(
    source: Path, into: Path, files: list[str], support: Iterable[str], not_run: Iterable[str]
) -> dict[str, Any]:
    """Run the SDK's test `files` (with their helper modules `support`) in one child pytest.

    Returns a JSON value: the child's exit status (None when it ran out of time), the end of its
    output, and each test's outcome by id (`file::name[param]`, see `_outcomes`).
    """
    project = _extract(source, into, [*files, *support])
    report = project / "report.xml"
    env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1", "PYTHONPATH": str(project)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        *(f"tests/{name}" for name in files),
        *(f"--deselect=tests/{name}" for name in not_run),
        "-q",
        "-p",
        "no:cacheprovider",
        # A file that cannot be imported fails its own check, not every file's.
        "--continue-on-collection-errors",
        # A test that waits for one of the SDK's private worker functions would wait forever.
        "--timeout=20",
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        f"--junitxml={report}",
        "--rootdir",
        str(project),
        "-c",
        os.devnull,
    ]
    try:
        done = subprocess.run(
            command, cwd=project, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout or b""
        text = output.decode(errors="replace") if isinstance(output, bytes) else output
        return {
            "returncode": None,
            "output": f"{text[-_REPORT_CHARS:]}\n(stopped after {RUN_TIMEOUT} s)",
            "outcomes": {},
        }
    return {
        "returncode": done.returncode,
        "output": (done.stdout[-_REPORT_CHARS:] + done.stderr[-_REPORT_CHARS:]),
        "outcomes": _outcomes(report, files) if report.is_file() else {},
    }


SDK_TESTS_BROKEN_BY = (
    # The SDK's encryption tests stop Fernet's clock by patching `cryptography.fernet.time.time`;
    # newer cryptography releases no longer import `time` there, so the patch itself fails, on
    # the SDK as on turnstore (turnstore's own expiry tests cover what they test).
    "No module named 'cryptography.fernet.time'",
)
"""Errors in a report that say the SDK's test cannot run with the installed dependencies: such a
failure is no difference of turnstore's."""


def check_file(
    results: dict[str, Any], sdk_file: str, known_differences: dict[str, str]
) -> dict[str, str]:
    """Check the outcomes of one SDK test file; return them (test id -> outcome).

    Fails when none of its tests ran, when one fails that `known_differences` does not list,
    or when a listed one now passes.
    """
    mine = {
        test_id: result
        for test_id, result in results["outcomes"].items()
        if test_id.startswith(f"{sdk_file}::")
    }
    assert mine, (
        f"no test of {sdk_file} ran (exit status {results['returncode']}):\n{results['output']}"
    )
    unexpected = [
        f"{test_id}\n{result['report']}"
        for test_id, result in sorted(mine.items())
        if result["outcome"] == "failed"
        and test_id not in known_differences
        and not any(broken in result["report"] for broken in SDK_TESTS_BROKEN_BY)
    ]
    listed = [t for t in known_differences if t.startswith(f"{sdk_file}::")]
    fixed = [t for t in listed if mine.get(t, {}).get("outcome") == "passed"]
    assert not unexpected, f"new failures in {sdk_file}:\n" + "\n\n".join(unexpected)
    assert not fixed, f"listed as failing but now pass (update KNOWN_DIFFERENCES): {fixed}"
    return {test_id: result["outcome"] for test_id, result in mine.items()}
