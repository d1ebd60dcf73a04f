"""The release artefacts: `python -m build`, `twine check --strict`, the wheel's contents, and
the wheel installed into a fresh venv that cannot see this checkout, running the README's first
example against the bundled fake server."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import turnstore

ROOT = Path(__file__).resolve().parents[2]


def run(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done.stdout


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: nothing that points into this checkout or its venv."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    return env


def readme_first_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", readme, re.S)[0]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # builds or installs into a fresh environment
def test_build_check_and_install_the_wheel_into_a_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--outdir", dist, ROOT, cwd=tmp_path)
    version = turnstore.__version__
    wheel = dist / f"turnstore-{version}-py3-none-any.whl"
    sdist = dist / f"turnstore-{version}.tar.gz"
    assert sorted(p.name for p in dist.iterdir()) == sorted([wheel.name, sdist.name])
    run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, cwd=tmp_path)
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert f"turnstore-{version}/src/turnstore/py.typed" in members
    assert not [n for n in members if n.startswith(f"turnstore-{version}/tests/")], members

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"turnstore-{version}.dist-info/METADATA").decode("utf-8")
    assert "turnstore/py.typed" in names
    assert f"turnstore-{version}.dist-info/licenses/LICENSE" in names
    assert "turnstore/testing/fake_openai/__main__.py" in names
    top = {name.split("/")[0] for name in names}
    assert top == {"turnstore", f"turnstore-{version}.dist-info"}, top
    assert not [n for n in names if re.search(r"(^|/)(tests|docs|scripts|bench|examples)/", n)]
    assert f"Version: {version}" in metadata
    assert "Requires-Dist: openai" in metadata
    assert "License-Expression: MIT" in metadata
    # What users see on the package index: their extras only (the contributor tools are
    # dependency groups, not published), the project links, and the README for users.
    extras = set(re.findall(r"^Provides-Extra: (\S+)$", metadata, re.M))
    assert extras == {"postgres", "redis", "encryption"}, extras
    assert not re.search(r"^Requires-Dist: .*extra == \"(dev|docs)\"", metadata, re.M)
    for project_url in (
        "Project-URL: Source, https://github.com/turnstore/turnstore",
        "Project-URL: Issues, https://github.com/turnstore/turnstore/issues",
        "Project-URL: Changelog, https://github.com/turnstore/turnstore/blob/main/CHANGELOG.md",
        "Project-URL: Documentation, https://turnstore.github.io/turnstore/",
    ):
        assert project_url in metadata, project_url
    assert "Description-Content-Type: text/markdown" in metadata
    description = metadata.split("\n\n", 1)[1]
    assert description.strip() == (ROOT / "README.md").read_text(encoding="utf-8").strip()
    assert "make bench" not in description  # contributor material is on the docs site
    print(f"\n{wheel.name}: {wheel.stat().st_size} bytes, {len(names)} files")
    print("\n".join(names))

    # A fresh venv, outside the checkout: pip installs the wheel and its dependencies only.
    venv = tmp_path / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    env = clean_env()
    run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--quiet",
        "--no-compile",  # the same files; a module is compiled when it is first imported
        wheel,
        cwd=tmp_path,
        env=env,
    )
    home = tmp_path / "home"
    home.mkdir()
    where = run(python, "-c", "import turnstore; print(turnstore.__file__)", cwd=home, env=env)
    assert Path(where.strip()).is_relative_to(venv), where
    assert run(venv / "bin" / "turnstore", "--version", cwd=home, env=env).strip() == (
        f"turnstore {version}"
    )

    # The README's first example, against `python -m turnstore.testing.fake_openai`.
    (home / "readme_example.py").write_text(readme_first_example(), encoding="utf-8")
    server = subprocess.Popen(
        [python, "-m", "turnstore.testing.fake_openai"],
        cwd=home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        command, *assignments = shlex.split(server.stdout.readline())
        assert command == "export"
        exports = dict(assignment.split("=", 1) for assignment in assignments)
        assert set(exports) == {"OPENAI_BASE_URL", "OPENAI_API_KEY"}
        out = run(python, "readme_example.py", cwd=home, env={**env, **exports}, timeout=300)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    print(out)
    first, second = out.strip().splitlines()
    assert first.startswith('(fake model) You said "What city is the Golden Gate Bridge in?"')
    # The second turn carried the first: the session remembered it.
    assert second == (
        '(fake model) You said "What state is it in?". '
        'Your earlier message: "What city is the Golden Gate Bridge in?".'
    )
    assert (home / "conversations.db").is_file()
    listed = run(venv / "bin" / "turnstore", "--db", "conversations.db", "list", cwd=home, env=env)
    assert re.search(r"^\s*4\s+\S+ \S+\s+conversation_123$", listed, re.M), listed

    # The README's try-out, its shell lines as written (a free port instead of 8787): the
    # server in one shell, `eval` of its export line and the example in another.
    section = readme_try_out()
    start, client = re.findall(r"```bash\n(.*?)```", section, re.S)
    (expected,) = re.findall(r"```text\n(.*?)```", section, re.S)
    assert re.search(r"pip install (-e \.|\"turnstore @ )", start), start
    server_line = next(line for line in start.splitlines() if "fake_openai" in line)
    port = str(free_port())
    (home / ".venv").symlink_to(venv)  # the README's `python3 -m venv .venv`, done above
    (home / "example.py").write_text(readme_first_example(), encoding="utf-8")
    (home / "conversations.db").unlink()
    shell_server = subprocess.Popen(
        ["bash", "-c", f". .venv/bin/activate\nexec {server_line.replace('8787', port)}"],
        cwd=home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert shell_server.stdout is not None
        assert shell_server.stdout.readline().startswith("export OPENAI_BASE_URL=")
        out = run("bash", "-c", client.replace("8787", port), cwd=home, env=env, timeout=300)
    finally:
        shell_server.terminate()
        shell_server.communicate(timeout=30)
    assert out == expected


def readme_try_out() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("## Try it without an API key\n", 1)[1].split("\n## ", 1)[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
