"""The Makefile targets a newcomer runs: `make docs` (port, docs-only install), `make bench`."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support.shared import kept_folder

ROOT = Path(__file__).resolve().parents[2]


def make(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_make_docs_on_a_busy_port_says_so_in_one_line_before_installing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = make("docs", f"PORT={port}", f"VENV={venv}", timeout=60)
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port} on 127.0.0.1 is in use" in lines[0]
    assert f"make docs PORT={port + 1}" in lines[0]
    assert not venv.exists()  # checked before anything was installed or built


@pytest.mark.parametrize("port", ["abc", "0", "70000", "80 80"])
def test_make_docs_with_a_port_that_is_not_a_number_says_so_in_one_line(
    port: str, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    done = make("docs", f"PORT={port}", f"VENV={venv}", timeout=60)
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"PORT={port} is not a port number" in lines[0]
    assert "Traceback" not in done.stderr
    assert not venv.exists()  # checked before anything was installed or built


def test_make_bench_runs_every_benchmark_and_reports_each_miss(tmp_path: Path) -> None:
    missed = tmp_path / "bench_missed.py"
    missed.write_text(
        "print('ratio 0.50x')\nprint('FAIL  ratio 0.50 >= 1.0')\nraise SystemExit(1)\n",
        encoding="utf-8",
    )
    met = tmp_path / "bench_met.py"
    met.write_text("print('ratio 3.00x')\nprint('PASS  ratio 3.00 >= 1.0')\n", encoding="utf-8")
    # This interpreter runs the benchmarks; a stamp newer than pyproject.toml skips `make venv`.
    stamp = tmp_path / "stamp"
    stamp.touch()
    env = [f"BIN={Path(sys.executable).parent}", f"STAMP={stamp}"]
    done = make("bench", *env, f"BENCHES={missed} {met}")
    assert done.returncode != 0
    out = done.stdout
    assert out.index(f"==> {missed}") < out.index("FAIL  ratio 0.50") < out.index(f"==> {met}")
    assert "PASS  ratio 3.00" in out  # the second benchmark ran after the first missed
    assert f"FAIL: a target was missed in: {missed}" in out

    done = make("bench", *env, f"BENCHES={met}")
    assert done.returncode == 0, done.stderr
    assert "every benchmark met its target" in done.stdout


def test_make_bench_covers_every_benchmark() -> None:
    done = make("-n", "bench")
    assert done.returncode == 0, done.stderr
    for bench in sorted((ROOT / "bench").glob("bench_*.py")):
        assert f"bench/{bench.name}" in done.stdout
    # The benchmarks table is on the contributing page (the README is for users).
    page = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    for bench in sorted((ROOT / "bench").glob("bench_*.py")):
        assert f"`bench/{bench.name}`" in page, f"docs/contributing.md does not list {bench.name}"


def _docs_venv(tmp_path: Path) -> Path:
    """Where `make docs` installs the docs group for this test.

    Kept between runs (`kept_folder`) and named by pyproject.toml's digest: the docs group is
    installed from nothing on a machine's first run and after every change of pyproject.toml;
    on the other runs make finds its stamp and installs nothing, and the test checks the same
    packages and serves the site the same way.
    """
    kept = kept_folder("docs-venv")
    if kept is None:
        return tmp_path / "docs-venv"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    for old in kept.glob("venv-*"):
        if old.name != f"venv-{digest}":
            shutil.rmtree(old)  # made for an earlier pyproject.toml
    return kept / f"venv-{digest}"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # builds or installs into a fresh environment
def test_make_docs_installs_only_the_site_and_serves_on_port(tmp_path: Path) -> None:
    venv = _docs_venv(tmp_path)
    # Without compiling every installed module to bytecode: what is installed is the same, and a
    # module is compiled when `make docs` imports it.
    done = make("docs-venv", f"VENV={venv}", timeout=900, env={**os.environ, "PIP_NO_COMPILE": "1"})
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.lower()
    installed = {line.split("==")[0].replace("_", "-") for line in listed.splitlines()}
    for needed in ("mkdocs", "mkdocs-material", "mkdocs-static-i18n", "mkdocstrings", "jieba"):
        assert needed in installed
    for unwanted in (
        "playwright",
        "asyncpg",
        "aiomysql",
        "redis",
        "sqlalchemy",
        "ruff",
        "mypy",
        "typos",
        "pytest",
        "openai-agents",
    ):
        assert unwanted not in installed, f"make docs installed {unwanted}"

    port = free_port()
    env = {**os.environ, "DOCS_TRANSLATIONS": "false"}
    serving = subprocess.Popen(
        ["make", "--no-print-directory", "docs", f"PORT={port}", f"VENV={venv}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        page = ""
        while time.monotonic() < deadline and serving.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    page = response.read().decode("utf-8")
                    break
            except OSError:
                time.sleep(1)
        assert "turnstore" in page, serving.stderr.read() if serving.poll() is not None else ""
    finally:
        os.killpg(serving.pid, signal.SIGINT)
        try:
            serving.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serving.pid, signal.SIGKILL)
            serving.communicate(timeout=30)
