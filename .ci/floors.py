#!/usr/bin/env python3
"""Prove the dependency floors: every runtime dependency at its declared minimum, in a fresh venv.

    python .ci/floors.py                            # what `make test-floors` runs
    python .ci/floors.py --pin redis==6.0.0 --only smoke   # one dependency at another version
    python .ci/floors.py --root COPY --only import         # a copy with edited floors

Reads `pyproject.toml`: the requirements of `[project] dependencies` and of every extra except
the contributor ones (dev, docs), each of which must declare a floor (`name>=X`). Then, in a new
venv outside this checkout:

1. installs this project with those extras, every requirement pinned to `==floor`, and, when the
   smoke tests run, the test runner (pytest, pytest-asyncio, pytest-timeout; not pinned: they are
   not our dependencies); nothing is compiled to bytecode at install (a module is compiled when
   it is first imported, as pip leaves it to be with `--no-compile`);
2. imports every public name of `turnstore` (the backends included) from outside the checkout;
3. runs the README's first example against `python -m turnstore.testing.fake_openai`;
4. runs the backend smoke tests (the session contract on SQLite, PostgreSQL, PgBouncer, Redis,
   the Redis Cluster, and the encrypted session) with the venv's interpreter: turnstore is the
   installed copy, not `src/`.

With `--reuse DIR` (what the test suite passes), the venv of step 1 is kept in `DIR`, named by
what was installed into it (the pins, the extras, the test runner, the Python), and a later run
with the same floors installs only this project into it again (`--no-deps`): the floors are
installed from nothing once, not on every run. A venv left half-built (no `.complete` mark) is
built again. `make test-floors` and the workflow's floors job always use a new venv.

Exits 0 when all pass, 1 with the failing step's output otherwise. Service tests follow
`TURNSTORE_REQUIRE_SERVICES` as the suite does. Needs only Python 3.11+ with pip 22.3+: that
pip installs into the venv (`pip --python`), which is made without one of its own.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRIBUTOR_EXTRAS = frozenset({"dev", "docs"})
TEST_RUNNER = ["pytest", "pytest-asyncio", "pytest-timeout"]
SMOKE_TESTS = [
    "tests/memory/test_sqlite_conformance.py",
    "tests/memory/test_sqlalchemy_session.py::TestPostgresConformance",
    "tests/memory/test_pgbouncer.py::TestPgBouncerConformance",
    "tests/memory/test_redis_session.py::TestRedisConformance",
    "tests/memory/test_redis_cluster.py::TestRedisClusterConformance",
    "tests/encrypted/test_encrypted_session.py",
]
# Needs the OpenAI Agents SDK, a contributor tool with its own openai floor.
SMOKE_DESELECT = [
    "tests/encrypted/test_encrypted_session.py::test_reads_what_the_sdks_encrypted_session_wrote",
]
STEPS = ("install", "import", "readme", "smoke")

_FLOOR = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$")


class FloorsError(Exception):
    """A step failed; the message says which and shows its output."""


def runtime_requirements(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The runtime requirement strings of `root`'s pyproject.toml and its runtime extras."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = sorted(set(project.get("optional-dependencies", {})) - CONTRIBUTOR_EXTRAS)
    requirements = list(project.get("dependencies", []))
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return requirements, extras


def floor_pins(requirements: list[str]) -> dict[str, str]:
    """`{"openai": "openai==2.9.0", ...}`: each requirement pinned to its declared floor.

    Raises:
        FloorsError: a requirement declares no `>=` floor (or a marker this tool does not read).
    """
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = _FLOOR.match(requirement)
        floor = match and re.search(r">=\s*([^,\s]+)", match.group(3))
        if not match or not floor or ";" in requirement:
            raise FloorsError(
                f"{requirement!r} in pyproject.toml declares no floor: write it as 'name>=X' "
                "with the oldest release that passes `make test-floors`"
            )
        name = match.group(1).lower().replace("_", "-")
        pins[name] = f"{match.group(1)}{match.group(2) or ''}=={floor.group(1)}"
    return pins


def _run(args: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    print("$", " ".join(str(a) for a in args), flush=True)
    try:
        done = subprocess.run(
            [str(a) for a in args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise FloorsError(f"{args[0]} ... took more than {timeout:.0f} s: stopped") from exc
    if done.returncode != 0:
        raise FloorsError(f"exit status {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


def _user_env() -> dict[str, str]:
    """A user's shell: nothing that points into this checkout, its venv or a real API."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, server: subprocess.Popen[str], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise FloorsError(f"the fake server exited with {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise FloorsError(f"the fake server did not listen on 127.0.0.1:{port} within {seconds} s")


def _release(version: str) -> tuple[str, ...]:
    """`"4.11"` and `"4.11.0"` alike: the version's parts without trailing zeros."""
    parts = version.split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return tuple(parts)


def readme_example(root: Path = ROOT) -> str:
    """The README's first Python block: the example a new user runs first."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    if not blocks:
        raise FloorsError("README.md has no ```python block to run")
    return str(blocks[0])


def reused_venv(folder: Path, pins: dict[str, str], extras: list[str]) -> Path:
    """The venv in `folder` for exactly these floors on this Python.

    Its name is a digest of the pins, the extras, the test runner (a kept venv always has it) and
    the Python version, so a change of any of them gives another venv.
    """
    what = [sorted(pins.values()), extras, TEST_RUNNER, sys.version]
    digest = hashlib.sha256(json.dumps(what).encode("utf-8")).hexdigest()[:16]
    return folder / f"floors-{digest}"


def check(
    root: Path,
    venv: Path,
    pins: dict[str, str],
    extras: list[str],
    only: set[str],
    *,
    reuse: bool = False,
) -> None:
    """Install `root` and the floors into `venv` and run the steps in `only`.

    `venv` is made new, unless `reuse` and it holds a complete install of the same floors
    (`reused_venv`): then only `root` is installed into it again.
    """
    env = _user_env()
    home = venv.parent / f"{venv.name}-home"
    home.mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    complete = venv / ".complete"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile"]
    project = f"{root}[{','.join(extras)}]" if extras else str(root)

    print(f"\n==> floors: {' '.join(sorted(pins.values()))}", flush=True)
    if reuse and complete.exists():
        print(f"(the floors are installed in {venv}: installing only the project again)")
        _run([*pip, "--no-deps", "--force-reinstall", root], cwd=home, env=env, timeout=900)
    else:
        if venv.exists():
            shutil.rmtree(venv)  # a half-built venv of an interrupted run
        _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=home, env=env, timeout=120)
        tools = TEST_RUNNER if "smoke" in only or reuse else []
        _run([*pip, project, *pins.values(), *tools], cwd=home, env=env, timeout=900)
        if reuse:
            complete.touch()
    names = [pin.split("==")[0].split("[")[0] for pin in pins.values()]
    installed = _run(
        [
            python,
            "-c",
            "import sys, importlib.metadata as m\n"
            "for n in sys.argv[1:]: print(f'{n}=={m.version(n)}')",
            *names,
        ],
        cwd=home,
        env=env,
        timeout=60,
    )
    print(installed, end="")
    got = dict(line.lower().split("==") for line in installed.split())
    for pin in pins.values():
        name, version = pin.split("==")
        name = name.split("[")[0].lower()
        if _release(got[name]) != _release(version):
            raise FloorsError(f"pip installed {name} {got[name]}, not the floor asked for: {pin}")

    if "import" in only:
        print("\n==> import every public name of turnstore", flush=True)
        where = _run(
            [
                python,
                "-c",
                "import turnstore, turnstore.testing\n"
                "for name in turnstore.__all__: getattr(turnstore, name)\n"
                "print(turnstore.__file__)",
            ],
            cwd=home,
            env=env,
            timeout=120,
        )
        if not Path(where.strip()).is_relative_to(venv):
            raise FloorsError(f"turnstore was imported from {where.strip()}, not from {venv}")

    if "readme" in only:
        print("\n==> the README's first example against the fake OpenAI server", flush=True)
        (home / "readme_example.py").write_text(readme_example(root), encoding="utf-8")
        port = _free_port()
        server = subprocess.Popen(
            [python, "-m", "turnstore.testing.fake_openai", "--port", str(port)],
            cwd=home,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_port(port, server)
            out = _run(
                [python, "readme_example.py"],
                cwd=home,
                env={
                    **env,
                    "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
                    "OPENAI_API_KEY": "sk-fake",
                },
                timeout=300,
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
        print(out, end="")
        if out.count("(fake model)") != 2:
            raise FloorsError(f"the README example printed no two fake-model answers:\n{out}")

    if "smoke" in only:
        print("\n==> the backend smoke tests", flush=True)
        deselect = [arg for test in SMOKE_DESELECT for arg in ("--deselect", test)]
        out = _run(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *deselect, *SMOKE_TESTS],
            cwd=root,
            env=env,
            timeout=900,
        )
        print(out.strip().splitlines()[-1] if out.strip() else "")


def main(argv: list[str] | None = None) -> int:
    """Check the floors; 0 when every step passed, 1 (and the reason on stderr) otherwise."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="REQ",
        help="install REQ (name==version) instead of that dependency's floor",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=STEPS[1:],
        help="run only this step after the install (repeatable; default: all)",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="the project to check (default: this checkout)",
    )
    parser.add_argument("--venv", type=Path, help="where to create the venv (default: a temp dir)")
    parser.add_argument(
        "--reuse",
        type=Path,
        metavar="DIR",
        help="keep the venv in DIR and reuse it while the floors are the same (the test suite)",
    )
    args = parser.parse_args(argv)
    try:
        root = args.root.resolve()
        requirements, extras = runtime_requirements(root)
        pins = floor_pins(requirements)
        for pin in args.pin:
            name = re.split(r"[\[=<>!~ ]", pin, maxsplit=1)[0].lower().replace("_", "-")
            if name not in pins:
                raise FloorsError(f"--pin {pin}: {name} is not a runtime dependency")
            pins[name] = pin
        only = set(args.only or STEPS[1:])
        if args.reuse:
            args.reuse.mkdir(parents=True, exist_ok=True)
            venv = reused_venv(args.reuse.resolve(), pins, extras)
            with open(f"{venv}.lock", "w") as lock:  # one run at a time builds or uses it
                fcntl.flock(lock, fcntl.LOCK_EX)
                check(root, venv, pins, extras, only, reuse=True)
        elif args.venv:
            if args.venv.exists():
                raise FloorsError(f"--venv {args.venv} exists: name a new folder")
            check(root, args.venv.resolve(), pins, extras, only)
        else:
            with tempfile.TemporaryDirectory(prefix="turnstore-floors-") as tmp:
                check(root, Path(tmp) / "venv", pins, extras, only)
    except FloorsError as exc:
        print(f"floors: FAILED: {exc}", file=sys.stderr)
        return 1
    print("\nfloors: every runtime dependency works at its declared floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
