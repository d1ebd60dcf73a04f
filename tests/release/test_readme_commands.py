"""The README's commands: a fresh clone's two, the install of every extra, and the contributing
page that holds the rest of the contributor commands."""

from __future__ import annotations

import re
import socket
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONTRIBUTING = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")


def shell_lines(text: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]


def make_targets(text: str) -> set[str]:
    targets = {m.split()[1] for line in shell_lines(text) for m in re.findall(r"make \w+", line)}
    return targets | set(re.findall(r"`make (\w+)", text))


def test_the_readme_test_command_is_what_ci_runs() -> None:
    section = README.split("## Two commands for a fresh clone", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \w+)", section, re.M)
    assert commands == ["make docs", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == "make test"


def test_every_make_command_in_the_readme_and_contributing_page_is_a_target() -> None:
    assert {"docs", "test"} <= make_targets(README)
    assert {"docs", "test", "venv", "bench"} <= make_targets(CONTRIBUTING)
    with socket.socket() as probe:  # a free port, so `make -n docs` passes its port checks
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for target in sorted(make_targets(README) | make_targets(CONTRIBUTING)):
        done = subprocess.run(
            ["make", "-n", target, f"PORT={port}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"make {target}: {done.stderr}"


def test_python_commands_run_in_an_activated_venv_or_from_it() -> None:
    for name, text in (("README.md", README), ("docs/contributing.md", CONTRIBUTING)):
        activated = text.find(". .venv/bin/activate")
        assert activated >= 0, f"{name} never says to activate .venv"
        for line in shell_lines(text):
            if line.startswith(("python -m turnstore", "python examples/")):
                assert text.find(line) > activated, (
                    f"{name}: {line!r} before the venv is activated; use .venv/bin/"
                )


def test_the_readme_installs_every_published_extra_and_links_the_contributing_pages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    assert extras == {"postgres", "redis", "encryption"}  # dev tools are dependency groups
    installs = [line for line in shell_lines(README) if line.startswith("pip install")]
    # Until the package is published, the README installs from the repository.
    source = "@ git+https://github.com/turnstore/turnstore"
    for extra in sorted(extras):
        line = f'pip install "turnstore[{extra}] {source}"'
        assert line in installs, f"README: no install of {extra}"
    assert "https://turnstore.github.io/turnstore/contributing/" in README
    # Contributor material lives on the contributing pages, not in the package's long description.
    for heading in ("## Benchmarks", "## Architecture", "## Continuous integration"):
        assert heading not in README
    assert len(README.encode("utf-8")) < 8_000
