"""The `turnstore` command's small frictions: typos, unsupported URLs, option errors, help,
error lines and the mode of a replaced export file. Run as a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from turnstore import SQLiteSession


def turnstore(
    *args: str, cwd: Path | None = None, umask: int = -1
) -> subprocess.CompletedProcess[str]:
    """Run the command line in a child process, without `TURNSTORE_DB` from the environment."""
    env = {k: v for k, v in os.environ.items() if k != "TURNSTORE_DB"}
    return subprocess.run(
        [sys.executable, "-m", "turnstore.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        umask=umask,
        check=False,
    )


def fill(path: Path, sessions: dict[str, int]) -> None:
    import asyncio

    async def run() -> None:
        for session_id, count in sessions.items():
            async with SQLiteSession(session_id, path) as session:
                await session.add_items([{"role": "user", "content": str(n)} for n in range(count)])

    asyncio.run(run())


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("typo", "meant"), [("lst", "list"), ("expot", "export"), ("stat", "stats")]
)
def test_a_mistyped_command_gets_a_did_you_mean(typo: str, meant: str, tmp_path: Path) -> None:
    done = turnstore("--db", "x.db", typo, cwd=tmp_path)
    assert done.returncode == 2
    assert f"did you mean {meant!r}?" in error_line(done)


def test_an_unknown_command_lists_the_commands(tmp_path: Path) -> None:
    done = turnstore("--db", "x.db", "frobnicate", cwd=tmp_path)
    assert done.returncode == 2
    assert "did you mean" not in done.stderr
    assert "list, show, export, import, clear, prune, stats" in error_line(done)


@pytest.mark.parametrize("url", ["mongodb://localhost/app", "http://localhost:8000"])
def test_an_unsupported_url_is_one_line_naming_the_accepted_forms(url: str, tmp_path: Path) -> None:
    done = turnstore("--db", url, "list", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "Can't load plugin" not in done.stderr
    for form in (
        "sqlite:///",
        "postgresql://",
        "mysql+aiomysql://",
        "redis://",
        "redis+cluster://",
    ):
        assert form in done.stderr


def test_a_synchronous_mysql_url_names_the_missing_driver_not_the_postgres_extra(
    tmp_path: Path,
) -> None:
    done = turnstore("--db", "mysql://root@127.0.0.1/test", "list", cwd=tmp_path)
    assert done.returncode == 2
    assert "MySQLdb" in done.stderr
    assert "mysql+aiomysql://" in done.stderr
    assert "postgres" not in done.stderr


def test_clear_s_help_says_it_deletes_the_session(tmp_path: Path) -> None:
    done = turnstore("--help", cwd=tmp_path)
    line = next(line for line in done.stdout.splitlines() if line.strip().startswith("clear"))
    assert "delete a session" in line
    fill(tmp_path / "c.db", {"a": 2})
    assert turnstore("--db", "c.db", "clear", "a", cwd=tmp_path).returncode == 0
    assert turnstore("--db", "c.db", "list", cwd=tmp_path).stdout.strip() == "no sessions"


@pytest.mark.parametrize("size", ["-1", "0", "x"])
def test_a_bad_page_size_gets_one_message(size: str, tmp_path: Path) -> None:
    done = turnstore("--db", "x.db", "list", "--page-size", size, cwd=tmp_path)
    assert done.returncode == 2
    assert error_line(done).endswith(
        f"argument --page-size: must be a whole number of at least 1, got {size!r}"
    )


def test_a_bad_json_line_names_one_line_number(tmp_path: Path) -> None:
    good = json.dumps({"session_id": "a", "created_at": None, "item": {"role": "user"}})
    (tmp_path / "bad.jsonl").write_text(f"{good}\n{good}\n" + '{"session_id": x}\n')
    done = turnstore("--db", "new.db", "import", "bad.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    line = error_line(done)
    assert "bad.jsonl line 3, column 16 is not JSON" in line
    assert "line 1" not in line


def test_export_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", {"a": 2})
    out = tmp_path / "backup.jsonl"
    out.write_text("old\n")
    out.chmod(0o664)
    done = turnstore("--db", "c.db", "export", "--all", "-o", "backup.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o664
    assert out.read_text().count("\n") == 2


def test_a_new_export_file_gets_the_umask_s_mode(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", {"a": 2})
    done = turnstore(
        "--db", "c.db", "export", "--all", "-o", "new.jsonl", cwd=tmp_path, umask=0o022
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "new.jsonl").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db", "new.jsonl"]


def test_refused_sessions_are_named_a_few_with_the_count(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", {f"s{n:03d}": 1 for n in range(40)})
    assert (
        turnstore("--db", "c.db", "export", "--all", "-o", "b.jsonl", cwd=tmp_path).returncode == 0
    )
    done = turnstore("--db", "c.db", "import", "b.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    line = error_line(done)
    assert "40 of the file's sessions already hold items" in line
    assert "and 35 more" in line
    assert len(line) < 400
