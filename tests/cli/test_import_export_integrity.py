"""`turnstore import` / `export` and the stores under them: a record that cannot be stored stops
the import before anything is cleared or written, stamps far from 1970 round-trip, odd session
ids round-trip, and pruning one table pair leaves a table named like its archive alone."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from turnstore import SQLiteSession
from turnstore.cli import main


def cli_args(backend: Backend) -> list[str]:
    args = ["--db", backend.url]
    if backend.name in ("redis", "cluster"):
        args += ["--key-prefix", backend.key_prefix]
    return args


async def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _msg(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def record(session_id: str, item: dict[str, Any], created_at: str | None = None) -> str:
    return json.dumps({"session_id": session_id, "created_at": created_at, "item": item})


# --- nothing is cleared or written before every record is known storable -------------------------


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        # Valid ISO 8601, but out of range once moved to UTC: an OverflowError, not a ValueError.
        (
            '{"session_id": "%s", "created_at": "0001-01-01T00:00:00+01:00", "item": {"x": 1}}',
            "'created_at' is not ISO 8601",
        ),
        (
            '{"session_id": "%s", "created_at": "9999-12-31T23:59:59-01:00", "item": {"x": 1}}',
            "'created_at' is not ISO 8601",
        ),
        # Python's json reads 1e400 as infinity, which no backend stores as JSON.
        ('{"session_id": "%s", "created_at": null, "item": {"x": 1e400}}', "Out of range float"),
        # A lone surrogate in a key, not a value.
        ('{"session_id": "%s", "created_at": null, "item": {"\\ud800": 1}}', "surrogate"),
    ],
    ids=["before-year-1-in-utc", "after-9999-in-utc", "1e400", "surrogate-key"],
)
async def test_import_replace_with_a_bad_record_clears_nothing(
    backend: Backend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad_line: str,
    reason: str,
) -> None:
    kept = backend.session()
    await kept.add_items([{"kept": True}])
    sid = kept.session_id
    export = tmp_path / "e.jsonl"
    good = [record(sid, {"n": i}) for i in range(1200)]
    write_lines(export, [*good, bad_line % sid])
    for mode in ([], ["--append"], ["--replace"]):
        code, _, err = await run_cli(capsys, *cli_args(backend), "import", *mode, str(export))
        assert code == 1, err
        assert f"{export} line 1201" in err
        assert reason in err
        assert "Traceback" not in err
        assert await kept.get_items() == [{"kept": True}]


async def test_a_nul_in_a_session_id_is_refused_before_any_write_on_postgres_only(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = backend.session()
    export = tmp_path / "e.jsonl"
    nul_id = f"{first.session_id}-nul\x00id"
    write_lines(export, [record(first.session_id, {"n": 1}), record(nul_id, {"n": 2})])
    code, _, err = await run_cli(capsys, *cli_args(backend), "import", str(export))
    if backend.name in ("postgres", "pgbouncer"):
        assert code == 1
        assert f"{export} line 2" in err
        assert "NUL" in err
        assert await first.get_items() == []  # the session before it was not written either
    else:  # SQLite and Redis store it, and it reads back under the same id
        assert code == 0, err
        assert await first.get_items() == [{"n": 1}]
        assert await backend.session(nul_id).get_items() == [{"n": 2}]


# --- every stamp that Python can hold round-trips, to the millisecond ----------------------------

STAMPS = [
    "0001-01-01T00:00:00+00:00",
    "0900-06-15T08:30:00.123000+00:00",  # a year of three digits: strftime writes "900"
    "1969-12-31T23:59:59.999000+00:00",
    "9999-12-31T23:59:59.999000+00:00",  # far from 1970: a float loses the last millisecond
]


async def test_stamps_far_from_1970_round_trip_through_export(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = backend.session().session_id
    export = tmp_path / "old.jsonl"
    write_lines(export, [record(sid, {"n": i}, stamp) for i, stamp in enumerate(STAMPS)])
    code, _, err = await run_cli(capsys, *cli_args(backend), "import", str(export))
    assert code == 0, err
    code, out, err = await run_cli(capsys, *cli_args(backend), "export", sid)
    assert code == 0, err
    assert [json.loads(line)["created_at"] for line in out.splitlines()] == STAMPS
    assert await backend.session(sid).get_items() == [{"n": i} for i in range(len(STAMPS))]


# --- deleting a pair's sessions never reaches another pair's table -------------------------------


def _sdk_pair(path: str, sessions: str, messages: str, session_id: str) -> None:
    """A pair as the Agents SDK (or the previous release) wrote it: no archive table."""
    conn = sqlite3.connect(path)
    with conn:
        conn.executescript(
            f"""
            CREATE TABLE {sessions} (session_id TEXT PRIMARY KEY,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT '2000-01-01 00:00:00');
            CREATE TABLE {messages} (id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL, message_data TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
            INSERT INTO {sessions} (session_id) VALUES ('{session_id}');
            INSERT INTO {messages} (session_id, message_data)
                VALUES ('{session_id}', '{{"role":"user","content":"sdk"}}');
            """
        )
    conn.close()


@pytest.mark.parametrize(
    ("other_sessions", "other_messages"),
    [
        ("other_s", "chat_archive"),  # the other pair's messages table has the archive's name
        ("other_s", "CHAT_ARCHIVE"),  # ... in another case, which SQLite reads as the same
        ("chat_archive", "other_m"),  # the other pair's sessions table has it
    ],
    ids=["messages", "messages-other-case", "sessions"],
)
async def test_pruning_a_pair_leaves_a_table_named_like_its_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], other_sessions: str, other_messages: str
) -> None:
    path = str(tmp_path / "pairs.db")
    async with SQLiteSession(
        "shared-id", path, sessions_table=other_sessions, messages_table=other_messages
    ) as other:
        await other.add_items([{"role": "user", "content": "the other pair's"}])
    _sdk_pair(path, "chat_s", "chat", "shared-id")  # pair A, idle since 2000, no archive yet
    pair = ["--db", path, "--sessions-table", "chat_s", "--messages-table", "chat"]
    code, _, err = await run_cli(capsys, *pair, "prune", "--idle", "1d")
    assert code == 0, err
    async with SQLiteSession(
        "shared-id", path, sessions_table=other_sessions, messages_table=other_messages
    ) as other:
        assert await other.get_items() == [{"role": "user", "content": "the other pair's"}]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM chat").fetchone() == (0,)  # A was pruned
        assert conn.execute(f'SELECT count(*) FROM "{other_sessions}"').fetchone() == (1,)
    finally:
        conn.close()


# --- odd session ids and page sizes through the command line -------------------------------------


def run_command(*args: str) -> subprocess.CompletedProcess[str]:
    """`turnstore ARGS` in a child process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "turnstore.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_export_import_round_trips_an_empty_session_id(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`SQLiteSession("")` is a valid session; its export must import into every backend."""
    source = str(tmp_path / "source.db")
    async with SQLiteSession("", source) as empty, SQLiteSession("x\ny", source) as odd:
        await empty.add_items([_msg("empty id")])
        await odd.add_items([_msg("newline id")])
    dump = tmp_path / "dump.jsonl"
    code, _, err = await run_cli(capsys, "--db", source, "export", "--all", "-o", str(dump))
    assert code == 0, err
    target = ["--db", backend.url, "--key-prefix", backend.key_prefix]
    backend.session("")  # cleaned up after the test
    backend.session("x\ny")
    code, _, err = await run_cli(capsys, *target, "import", str(dump))
    assert code == 0, err
    code, out, err = await run_cli(capsys, *target, "show", "")
    assert code == 0, err
    assert "empty id" in out
    assert await backend.session("").get_items() == [_msg("empty id")]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_list_with_a_page_size_larger_than_any_store(backend: Backend) -> None:
    listed = run_command("--db", backend.url, "list", "--page-size", str(2**80))
    assert listed.returncode in (0, 2), listed.stderr
    assert "too large" not in listed.stderr
