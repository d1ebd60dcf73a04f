"""The project is called turnstore everywhere; the old name survives only as history.

The first release was built as `agent-sessions` (import name `agent_sessions`), a name that
belongs to another project on the package index. Stored data keeps the OpenAI Agents SDK's
names (the `agent_sessions` table, the `agent_sessions` Redis key prefix), so the bare word is
allowed; the distribution name, the import package, the environment variables and the base
exception's old spellings are not, except where a file tells the history of the rename.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

from turnstore.defaults import DEFAULT_MODEL

ROOT = Path(__file__).resolve().parents[2]

# The old project's name as a distribution, an import path, a module path, an environment
# variable or an exception; not the table name or key prefix `agent_sessions` on its own.
OLD_NAME = re.compile(
    r"agent-sessions"
    r"|AGENT_SESSIONS"
    r"|AgentSessions"
    r"|(?:import|from)\s+agent_sessions\b"
    r"|\bagent_sessions[./](?=[A-Za-z_])"
)

# Files that tell the history of the rename, and this test. Reviews (reviews/) are records that
# quote the pages as they were, the changelog included.
HISTORY_FOLDERS = ("reviews/",)
HISTORY = {
    "CHANGELOG.md",
    "tests/memory/test_previous_release_file.py",
    "tests/release/test_rename.py",
}


def tracked_files() -> list[str]:
    done = subprocess.run(
        ["git", "ls-files", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"git ls-files failed in {ROOT}: {done.stderr}"
    return [name for name in done.stdout.split("\0") if name]


def test_the_old_name_appears_only_where_history_is_told() -> None:
    found = []
    for name in tracked_files():
        if name in HISTORY or name.startswith(HISTORY_FOLDERS):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binary files (images, fonts) or a file deleted in the work tree
        for number, line in enumerate(text.splitlines(), 1):
            if OLD_NAME.search(line):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert found == [], "the old name outside the history files:\n" + "\n".join(found)


def test_no_agent_sessions_module_is_installed_with_turnstore() -> None:
    # No compatibility shim: `agent_sessions` is the other project's import name.
    assert importlib.util.find_spec("agent_sessions") is None
    assert not (ROOT / "src" / "agent_sessions").exists()


def test_the_readme_names_the_default_model_the_code_uses() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"An agent that names no model uses `{DEFAULT_MODEL}`" in readme
