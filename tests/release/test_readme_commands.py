"""The README's commands for a fresh clone: they exist, and the test command is CI's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def shell_lines() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]


def test_the_readme_test_command_is_what_ci_runs() -> None:
    section = README.split("## Two commands for a fresh clone", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \w+)", section, re.M)
    assert commands == ["make docs", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == "make test"


def test_every_make_command_in_the_readme_is_a_target() -> None:
    targets = {m.split()[1] for line in shell_lines() for m in re.findall(r"make \w+", line)}
    prose = set(re.findall(r"`make (\w+)", README))
    assert {"docs", "test", "venv", "bench"} <= targets | prose
    for target in sorted(targets | prose):
        done = subprocess.run(
            ["make", "-n", target, "PORT=0"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"make {target}: {done.stderr}"


def test_repository_commands_run_from_the_venv_or_the_readme_says_to_activate_it() -> None:
    assert ". .venv/bin/activate" in README
    for line in shell_lines():
        if line.startswith("python -m turnstore") or line.startswith("python examples/"):
            raise AssertionError(f"{line!r}: a newcomer's shell has no turnstore; use .venv/bin/")
