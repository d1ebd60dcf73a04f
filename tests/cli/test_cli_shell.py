"""The `turnstore` console script as a newcomer runs it from a shell (a real process each time)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import turnstore
from turnstore import SQLiteSession

SCRIPT = Path(sys.executable).with_name("turnstore")


def turnstore_cli(
    *args: str, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"the console script is not installed at {SCRIPT}"
    env = {k: v for k, v in os.environ.items() if k != "TURNSTORE_DB"}
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def fill(path: Path, sessions: dict[str, int]) -> None:
    async def run() -> None:
        for session_id, count in sessions.items():
            async with SQLiteSession(session_id, path) as session:
                await session.add_items(
                    [{"role": "user", "content": f"m{n}"} for n in range(count)]
                )

    asyncio.run(run())


def test_version(tmp_path: Path) -> None:
    done = turnstore_cli("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"turnstore {turnstore.__version__}"


@pytest.mark.parametrize(
    "args",
    [
        ["--db", "chats.db", "list", "--json"],
        ["list", "--db", "chats.db", "--json"],
        ["list", "--json", "--db", "chats.db"],
    ],
)
def test_db_before_or_after_the_command(args: list[str], tmp_path: Path) -> None:
    fill(tmp_path / "chats.db", {"alpha": 2})
    done = turnstore_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["session_id"] for line in done.stdout.splitlines()] == ["alpha"]


def test_storage_options_after_the_command_win(tmp_path: Path) -> None:
    fill(tmp_path / "chats.db", {"alpha": 2})
    fill(tmp_path / "other.db", {"beta": 1})
    done = turnstore_cli("--db", "other.db", "show", "alpha", "--db", "chats.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 2
    # Table names given after the command reach the store too (no such table: an error).
    done = turnstore_cli("list", "--db", "chats.db", "--messages-table", "nope", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert "has no table 'nope'" in done.stderr


def test_list_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    # Enough sessions that the output cannot all sit in the pipe's buffer when head exits.
    db = tmp_path / "many.db"
    fill(db, {"first": 1})
    with sqlite3.connect(db) as conn:
        ids = [f"session-{n:05d}-{'x' * 80}" for n in range(3000)]
        conn.executemany("INSERT INTO agent_sessions (session_id) VALUES (?)", [(i,) for i in ids])
        conn.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, '{}')",
            [(i,) for i in ids],
        )
    conn.close()
    shell = shutil.which("bash")
    assert shell is not None
    done = subprocess.run(
        [
            shell,
            "-c",
            f'set -o pipefail; "{SCRIPT}" --db many.db list --page-size 5000 --json | head -1',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # pipefail: the exit status of turnstore itself
    assert done.stderr == ""
    assert json.loads(done.stdout)["items"] == 1
    # The table form too.
    done = subprocess.run(
        [shell, "-c", f'set -o pipefail; "{SCRIPT}" --db many.db list --page-size 5000 | head -2'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_undecodable_import_names_the_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"session_id": "a", "item": {"role": "user", "content": "hi"}})
    (tmp_path / "latin1.jsonl").write_bytes(
        good.encode()
        + b"\n"
        + good.encode()
        + b"\n"
        + '{"session_id": "na\xefve"}'.encode("latin-1")
    )
    done = turnstore_cli("--db", "new.db", "import", "latin1.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "latin1.jsonl line 3 is not UTF-8 text" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "new.db").exists()  # nothing written

    (tmp_path / "broken.jsonl").write_text(good + "\n\n" + good[:-5] + "\n", encoding="utf-8")
    done = turnstore_cli("import", "broken.jsonl", "--db", "new.db", cwd=tmp_path)
    assert done.returncode == 1
    assert "broken.jsonl line 3, column 58 is not JSON: Invalid control character;" in done.stderr
    assert "Traceback" not in done.stderr

    # A UTF-8 byte order mark (as some editors write) is not an error.
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good.encode() + b"\n")
    done = turnstore_cli("import", "bom.jsonl", "--db", "new.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("command", [["list"], ["import", "export.jsonl"]])
def test_missing_directory_and_directory_as_db(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "export.jsonl").write_text(
        json.dumps({"session_id": "a", "item": {"role": "user", "content": "hi"}}) + "\n",
        encoding="utf-8",
    )
    done = turnstore_cli("--db", "no/such/dir/chats.db", *command, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "turnstore: error: the directory 'no/such/dir' of the SQLite database "
        "'no/such/dir/chats.db' does not exist\n"
    )
    assert not (tmp_path / "no").exists()

    (tmp_path / "folder").mkdir()
    done = turnstore_cli("--db", "folder", *command, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "turnstore: error: 'folder' is a directory: give the path of a SQLite file\n"
    )
    assert list((tmp_path / "folder").iterdir()) == []


def test_list_puts_the_id_last_and_pads_no_row_to_the_longest_id(tmp_path: Path) -> None:
    ids = {"用户-会话-一": 3, "세션": 12, "ユーザー": 1, "a-very-long-id-" * 8: 7}
    fill(tmp_path / "cjk.db", ids)
    done = turnstore_cli("--db", "cjk.db", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header, rows = lines[0], lines[1 : 1 + len(ids)]
    assert header.endswith("SESSION ID")
    start = header.index("SESSION ID")
    # The columns before the id have a fixed width: each id starts at the same column and
    # ends its line, whatever the width of the others.
    assert sorted(row[start:] for row in rows) == sorted(ids)
    for row in rows:
        assert int(row[:7]) == ids[row[start:]]


def test_export_to_a_missing_directory_or_a_directory_says_so(tmp_path: Path) -> None:
    fill(tmp_path / "chats.db", {"alpha": 2})
    done = turnstore_cli(
        "--db", "chats.db", "export", "--all", "-o", "no/dir/out.jsonl", cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stderr == (
        "turnstore: error: cannot write no/dir/out.jsonl: the directory 'no/dir' does not exist\n"
    )
    assert not (tmp_path / "no").exists()

    (tmp_path / "folder").mkdir()
    done = turnstore_cli("--db", "chats.db", "export", "--all", "-o", "folder", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "turnstore: error: cannot write folder: it is a directory; give the export file's path\n"
    )
    assert list((tmp_path / "folder").iterdir()) == []
    # No temp file of the export is left, nor SQLite's -wal and -shm (every connection closed).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chats.db", "folder"]
