"""The `turnstore` command on SQLite files of `AdvancedSQLiteSession`: branches stay apart.

`list` counts and `show` prints `main` (or `show --branch NAME`), never every branch flattened
into one history; `export` writes main, then each other branch with its name on each record, and
`import` into a SQLite file puts every record back on its branch. A plain file's export keeps its
format.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_cli_frictions import turnstore
from test_session_cli import run_cli

from support.backends import unique_prefix
from support.items import user
from turnstore import SQLiteSession
from turnstore.extensions.memory import AdvancedSQLiteSession


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


MAIN = [user("q1"), bot("a1"), user("q2"), bot("a2")]
RETRY = [user("q1"), bot("a1"), user("q2 again"), bot("a2 again"), user("q3 on retry")]


def lines(out: str) -> list[Any]:
    return [json.loads(line) for line in out.splitlines()]


async def write_branched(path: Path) -> None:
    async with AdvancedSQLiteSession(session_id="chat", db_path=path) as session:
        await session.add_items(MAIN)
        await session.create_branch_from_turn(2, "retry")
        await session.add_items(RETRY[2:])
        await session.switch_to_branch("main")
        await session.create_branch_from_turn(1, "fresh")
        await session.add_items([user("other start")])


@pytest.fixture
def branched(tmp_path: Path) -> Path:
    path = tmp_path / "branched.db"
    asyncio.run(write_branched(path))
    return path


def test_list_counts_and_show_prints_main_not_every_branch(
    branched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--db", str(branched), "list", "--json")
    assert code == 0
    assert [(row["session_id"], row["items"]) for row in lines(out)] == [("chat", 4)]
    code, out, _ = run_cli(capsys, "--db", str(branched), "show", "chat")
    assert (code, lines(out)) == (0, MAIN)
    code, out, _ = run_cli(capsys, "--db", str(branched), "show", "chat", "--branch", "retry")
    assert (code, lines(out)) == (0, RETRY)
    code, out, _ = run_cli(
        capsys, "--db", str(branched), "show", "chat", "--branch", "retry", "--limit", "2"
    )
    assert (code, lines(out)) == (0, RETRY[-2:])
    code, _, err = run_cli(capsys, "--db", str(branched), "show", "chat", "--branch", "nope")
    assert code == 1
    assert "no branch 'nope'" in err
    assert "'main', 'retry', 'fresh'" in err


def test_export_keeps_branches_apart_and_import_restores_them(
    branched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backup = tmp_path / "backup.jsonl"
    code, _, _ = run_cli(capsys, "--db", str(branched), "export", "--all", "-o", str(backup))
    assert code == 0
    records = lines(backup.read_text(encoding="utf-8"))
    assert [(r.get("branch"), r["item"]) for r in records] == [
        *((None, item) for item in MAIN),
        *(("retry", item) for item in RETRY),
        ("fresh", user("other start")),
    ]
    assert all("created_at" in record for record in records)

    restored = tmp_path / "restored.db"
    code, _, err = run_cli(capsys, "--db", str(restored), "import", str(backup))
    assert code == 0, err

    async def read_back() -> None:
        async with AdvancedSQLiteSession(session_id="chat", db_path=restored) as session:
            assert await session.get_items() == MAIN
            assert await session.get_items(branch_id="retry") == RETRY
            assert await session.get_items(branch_id="fresh") == [user("other start")]
            assert [b["branch_id"] for b in await session.list_branches()] == [
                "main",
                "retry",
                "fresh",
            ]
            # The restored branch is a branch like any other: it takes writes and pops.
            await session.switch_to_branch("retry")
            await session.add_items([bot("a3 on retry")])
            assert await session.pop_item() == bot("a3 on retry")

    asyncio.run(read_back())
    # Exported again, the restored file gives the same records; the session keeps its creation
    # time (read_back wrote to it since, so its last activity is new).
    code, out, _ = run_cli(capsys, "--db", str(restored), "export", "chat")
    assert code == 0
    again = lines(out)
    assert again[0]["session"]["created_at"] == records[0]["session"]["created_at"]
    assert again[0]["session"]["last_activity"] > records[0]["session"]["last_activity"]
    for record in (again[0], records[0]):
        del record["session"]
    assert again == records


def test_export_of_one_branch_and_import_with_replace(
    branched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--db", str(branched), "export", "chat", "--branch", "retry")
    assert code == 0
    assert [(r["branch"], r["item"]) for r in lines(out)] == [("retry", i) for i in RETRY]
    only_retry = tmp_path / "retry.jsonl"
    only_retry.write_text(out, encoding="utf-8")
    code, _, err = run_cli(capsys, "--db", str(branched), "import", "--replace", str(only_retry))
    assert code == 0, err

    async def read_back() -> None:
        async with AdvancedSQLiteSession(session_id="chat", db_path=branched) as session:
            assert await session.get_items() == []
            assert await session.get_items(branch_id="retry") == RETRY

    asyncio.run(read_back())


def test_branch_records_are_refused_by_a_store_without_branches(
    branched: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    code, out, _ = run_cli(capsys, "--db", str(branched), "export", "chat")
    backup = tmp_path / "backup.jsonl"
    backup.write_text(out, encoding="utf-8")
    prefix = unique_prefix("cli-branches")
    code, _, err = run_cli(capsys, "--db", redis_url, "--key-prefix", prefix, "import", str(backup))
    assert code == 1
    assert "'fresh', 'retry'" in err
    assert "only a SQLite file keeps" in err
    assert "Nothing was imported" in err
    # Refused before anything was written, so the prefix holds no key to clean up.
    code, out, _ = run_cli(capsys, "--db", redis_url, "--key-prefix", prefix, "list")
    assert (code, out.strip()) == (0, "no sessions")


def test_a_plain_file_exports_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.db"

    async def fill() -> None:
        async with SQLiteSession("chat", path) as session:
            await session.add_items(MAIN)

    asyncio.run(fill())
    code, out, _ = run_cli(capsys, "--db", str(path), "export", "chat")
    assert code == 0
    # The first record of the session also carries the session's times.
    assert [sorted(record) for record in lines(out)] == [
        ["created_at", "item", "session", "session_id"]
    ] + [["created_at", "item", "session_id"]] * (len(MAIN) - 1)
    code, out, _ = run_cli(capsys, "--db", str(path), "show", "chat", "--limit", "1")
    assert (code, lines(out)) == (0, MAIN[-1:])


@pytest.mark.parametrize("kind", ["postgres", "redis", "cluster"])
def test_a_file_with_branch_records_is_refused_before_any_session_is_written(
    kind: str, branched: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # Plain sessions come before the branched one in the file: none of them is written.
    out = turnstore("--db", str(branched), "export", "chat").stdout
    plain = [
        json.dumps({"session_id": f"plain-{n}", "created_at": None, "item": user("hi")})
        for n in range(3)
    ]
    backup = tmp_path / "backup.jsonl"
    backup.write_text("\n".join(plain) + "\n" + out, encoding="utf-8")
    if kind == "postgres":
        tag = uuid.uuid4().hex[:10]
        target = [
            "--db",
            request.getfixturevalue("postgres_url"),
            "--sessions-table",
            f"br{tag}_s",
            "--messages-table",
            f"br{tag}_m",
        ]
    else:
        url = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")
        target = ["--db", url, "--key-prefix", unique_prefix("cli-branches")]
    result = turnstore(*target, "import", str(backup))
    assert result.returncode == 1
    assert "'fresh', 'retry'" in result.stderr
    assert "Nothing was imported" in result.stderr
    listed = turnstore(*target, "list")
    if kind == "postgres":  # refused before the tables were even created
        assert listed.returncode == 1
        assert "has no table" in listed.stderr
    else:
        assert (listed.returncode, listed.stdout.strip()) == (0, "no sessions")
