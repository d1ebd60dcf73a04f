"""`turnstore list --prefix` and `turnstore prune --idle` on a SQLite file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from turnstore import SQLiteSession
from turnstore.cli import main


def fill(path: Path, session_ids: list[str]) -> None:
    async def run() -> None:
        for session_id in session_ids:
            async with SQLiteSession(session_id, path) as session:
                await session.add_items([{"role": "user", "content": session_id}])

    asyncio.run(run())


def test_list_with_a_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db.sqlite"
    fill(path, ["team-a/1", "team-a/2", "team-b/1"])
    assert main(["--db", str(path), "list", "--prefix", "team-a/", "--json"]) == 0
    listed = [json.loads(line)["session_id"] for line in capsys.readouterr().out.splitlines()]
    assert sorted(listed) == ["team-a/1", "team-a/2"]


def test_prune_deletes_idle_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "db.sqlite"
    fill(path, ["old", "new"])
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE agent_sessions SET updated_at = '2020-01-01 00:00:00' WHERE session_id = 'old'"
        )
    conn.close()
    assert main(["--db", str(path), "prune", "--idle", "30d"]) == 0
    assert "deleted 1 session idle for more than 30d" in capsys.readouterr().out
    assert main(["--db", str(path), "list", "--json"]) == 0
    assert [json.loads(line)["session_id"] for line in capsys.readouterr().out.splitlines()] == [
        "new"
    ]


@pytest.mark.parametrize("bad", ["30", "d", "3w", "1.5h", "10x"])
def test_prune_rejects_a_bad_duration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    path = tmp_path / "db.sqlite"
    fill(path, ["s"])
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(path), "prune", "--idle", bad])
    assert exit_info.value.code == 2
    assert "not a duration" in capsys.readouterr().err
