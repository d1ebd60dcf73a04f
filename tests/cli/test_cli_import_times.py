"""`turnstore export` and `import` keep each session's created and last-activity times: after a
move from one backend to another, `list` has the same order and `prune --idle` sees the same
idle sessions. A file without session times (an older export) imports as a write made now."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from turnstore import SQLiteSession
from turnstore.cli import main

NOW = datetime.now(UTC).replace(microsecond=123000)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


# session -> (created, last activity); the first item is stamped with the session's creation.
TIMES = {
    "old": (ago(60), ago(45)),
    "recent": (ago(20), ago(2)),
    "mid": (ago(50), ago(35)),
}


@dataclass
class Storage:
    """One backend, under tables or a key prefix of its own."""

    name: str
    args: list[str]


async def _drop_tables(url: str, tables: list[str]) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://", 1))
    async with engine.begin() as conn:
        for table in tables:
            await conn.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    await engine.dispose()


async def _delete_keys(url: str, prefix: str) -> None:
    from turnstore.memory.redis.session import create_client_for_url

    client = create_client_for_url(url)
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    for key in keys:
        await client.delete(key)
    await client.aclose()


@pytest.fixture
async def storages(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[dict[str, Storage]]:
    """`storages[name]`: the backends a test's parameters name, each cleaned up afterwards."""
    names: list[str] = list(request.param)
    made: dict[str, Storage] = {}
    cleanups = []
    tag = uuid.uuid4().hex[:10]
    for name in names:
        if name == "sqlite":
            made[name] = Storage(name, ["--db", str(tmp_path / "times.db")])
        elif name == "postgres":
            url = request.getfixturevalue("postgres_url")
            tables = [f"times_s_{tag}", f"times_m_{tag}"]
            made[name] = Storage(
                name,
                ["--db", url, "--sessions-table", tables[0], "--messages-table", tables[1]],
            )
            cleanups.append(_drop_tables(url, tables))
        else:
            url = request.getfixturevalue("redis_cluster_url" if name == "cluster" else "redis_url")
            prefix = f"times{tag}"
            made[name] = Storage(name, ["--db", url, "--key-prefix", prefix])
            cleanups.append(_delete_keys(url, prefix))
    yield made
    for cleanup in cleanups:
        await cleanup


async def cli(*args: str) -> str:
    """Run `turnstore ARGS` and return what it printed; it must succeed."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = await asyncio.to_thread(main, list(args))
    assert code == 0, err.getvalue()
    return out.getvalue()


def export_file(path: Path, *, with_times: bool = True) -> Path:
    lines = []
    for session_id, (created, last) in TIMES.items():
        for n in range(2):
            line: dict[str, Any] = {"session_id": session_id}
            if with_times and n == 0:
                line["session"] = {
                    "created_at": created.isoformat(),
                    "last_activity": last.isoformat(),
                }
            line["created_at"] = (created + timedelta(hours=n)).isoformat()
            line["item"] = {"role": "user", "content": f"{session_id} {n}"}
            lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def listed(storage: Storage) -> list[dict[str, Any]]:
    out = await cli(*storage.args, "list", "--json")
    return [json.loads(line) for line in out.splitlines()]


async def idle(storage: Storage, age: str) -> list[str]:
    out = await cli(*storage.args, "prune", "--idle", age, "--dry-run")
    return sorted(line.split("'")[1] for line in out.splitlines() if line.startswith("would"))


async def assert_original_times(storage: Storage) -> None:
    sessions = await listed(storage)
    assert [s["session_id"] for s in sessions] == ["recent", "mid", "old"]
    for s in sessions:
        created, last = TIMES[s["session_id"]]
        assert s["last_activity"] == last.isoformat()
        assert s["created_at"] == created.isoformat()
        assert s["items"] == 2
    assert await idle(storage, "30d") == ["mid", "old"]
    assert await idle(storage, "40d") == ["old"]


PAIRS = [
    (source, target)
    for source in ("sqlite", "postgres", "redis", "cluster")
    for target in ("sqlite", "postgres", "redis", "cluster")
    if source != target
]


@pytest.mark.parametrize("storages", PAIRS, indirect=True, ids=["-to-".join(p) for p in PAIRS])
async def test_a_move_between_backends_keeps_session_times(
    storages: dict[str, Storage], tmp_path: Path
) -> None:
    (source, target) = storages.values()
    await cli(*source.args, "import", str(export_file(tmp_path / "in.jsonl")))
    await assert_original_times(source)
    moved = tmp_path / "moved.jsonl"
    await cli(*source.args, "export", "--all", "-o", str(moved))
    first = json.loads(moved.read_text(encoding="utf-8").splitlines()[0])
    assert set(first["session"]) == {"created_at", "last_activity"}
    await cli(*target.args, "import", str(moved))
    await assert_original_times(target)


BACKENDS = [("sqlite",), ("postgres",), ("redis",), ("cluster",)]


@pytest.mark.parametrize("storages", BACKENDS, indirect=True, ids=[b[0] for b in BACKENDS])
async def test_an_export_without_session_times_imports_as_a_write_made_now(
    storages: dict[str, Storage], tmp_path: Path
) -> None:
    (storage,) = storages.values()
    await cli(*storage.args, "import", str(export_file(tmp_path / "in.jsonl", with_times=False)))
    assert await idle(storage, "1d") == []
    for s in await listed(storage):
        assert datetime.fromisoformat(s["last_activity"]) > ago(1)


@pytest.mark.parametrize("storages", BACKENDS, indirect=True, ids=[b[0] for b in BACKENDS])
async def test_append_keeps_the_later_last_activity_and_replace_the_file_s(
    storages: dict[str, Storage], tmp_path: Path
) -> None:
    (storage,) = storages.values()
    # "recent" exists with activity now; "old" exists with activity 45 days ago.
    first = tmp_path / "first.jsonl"
    first.write_text(
        json.dumps(
            {
                "session_id": "old",
                "session": {
                    "created_at": ago(60).isoformat(),
                    "last_activity": ago(45).isoformat(),
                },
                "created_at": ago(60).isoformat(),
                "item": {"role": "user", "content": "before"},
            }
        )
        + "\n"
        + json.dumps({"session_id": "recent", "created_at": None, "item": {"content": "now"}})
        + "\n",
        encoding="utf-8",
    )
    await cli(*storage.args, "import", str(first))
    update = tmp_path / "update.jsonl"
    update.write_text(
        "\n".join(
            json.dumps(
                {
                    "session_id": session_id,
                    "session": {
                        "created_at": ago(70).isoformat(),
                        "last_activity": ago(10).isoformat(),
                    },
                    "created_at": ago(10).isoformat(),
                    "item": {"role": "user", "content": "appended"},
                }
            )
            for session_id in ("old", "recent")
        )
        + "\n",
        encoding="utf-8",
    )
    await cli(*storage.args, "import", "--append", str(update))
    after = {s["session_id"]: s for s in await listed(storage)}
    # The later of the two: the file's for "old", the session's own (now) for "recent".
    assert after["old"]["last_activity"] == ago(10).isoformat()
    assert datetime.fromisoformat(after["recent"]["last_activity"]) > ago(1)
    assert await idle(storage, "5d") == ["old"]
    if storage.name in ("sqlite", "postgres"):  # Redis: a session is created at its first item
        assert after["old"]["created_at"] == ago(70).isoformat()
    await cli(*storage.args, "import", "--replace", str(update))
    after = {s["session_id"]: s for s in await listed(storage)}
    assert after["recent"]["last_activity"] == ago(10).isoformat()
    assert await idle(storage, "5d") == ["old", "recent"]


def _precision(stamp: str) -> str:
    """`second` for a whole-second time, `millisecond` for one kept to the millisecond."""
    fraction = datetime.fromisoformat(stamp).microsecond
    if fraction == 0:
        return "second"
    return "millisecond" if fraction % 1000 == 0 else "finer"


async def test_the_page_s_export_example_has_the_times_a_sqlite_session_writes(
    tmp_path: Path,
) -> None:
    """cli.md's example export: a SQLite session's items to the second, its session times to
    the millisecond (an export made at a whole second prints that one without a fraction)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    example = page.split("## Export and import", 1)[1].split("```json\n", 1)[1].split("```")[0]
    shown = [json.loads(line) for line in example.splitlines()]
    path = tmp_path / "conversations.db"
    async with SQLiteSession("user_42", path) as session:
        for line in shown:
            await session.add_items([line["item"]])
    out = await cli("--db", str(path), "export", "user_42")
    exported = [json.loads(line) for line in out.splitlines()]
    assert [list(line) for line in exported] == [list(line) for line in shown]
    for line in (*shown, *exported):
        assert _precision(line["created_at"]) == "second"
    for times in (shown[0]["session"], exported[0]["session"]):
        assert {_precision(stamp) for stamp in times.values()} <= {"second", "millisecond"}
    assert {_precision(stamp) for stamp in shown[0]["session"].values()} == {"millisecond"}
