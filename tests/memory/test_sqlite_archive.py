"""SQLiteSession's compaction archive: what `replace_history` moves there, and what removes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support.items import user
from turnstore import SQLiteSession
from turnstore.admin import open_session_store


def archive_rows(path: Path, session_id: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [
            row[0]
            for row in conn.execute(
                "SELECT message_data FROM agent_messages_archive WHERE session_id = ? ORDER BY id",
                (session_id,),
            )
        ]
    finally:
        conn.close()


async def test_archive_keeps_replaced_rows_in_order_across_replacements(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    async with SQLiteSession("s", path) as session, SQLiteSession("t", path) as other:
        await other.add_items([user("other")])
        await session.add_items([user("1"), user("2"), user("3")])
        assert await session.replace_history(
            (await session.snapshot_history()).prefix(2), [user("S1")]
        )
        await session.add_items([user("4")])
        assert await session.replace_history(await session.snapshot_history(), [user("S2")])
        assert await session.get_items() == [user("S2")]
        assert await session.get_archived_items() == [
            user("1"),
            user("2"),
            user("S1"),
            user("3"),
            user("4"),
        ]
        assert await other.get_archived_items() == []
        # archive=False: nothing more is archived.
        assert await session.replace_history(
            await session.snapshot_history(), [user("S3")], archive=False
        )
        assert len(await session.get_archived_items()) == 5
        # A refused replacement archives nothing.
        stale = await session.snapshot_history()
        await session.pop_item()
        assert not await session.replace_history(stale, [user("S4")])
        assert len(await session.get_archived_items()) == 5
        # clear_session removes the archive of this session only.
        await other.replace_history(await other.snapshot_history(), [user("o2")])
        await session.clear_session()
        assert await session.get_archived_items() == []
        assert await other.get_archived_items() == [user("other")]


async def test_a_corrupt_row_of_the_snapshot_moves_to_the_archive_intact(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([user("1"), user("2"), user("3")])
        conn = sqlite3.connect(path)
        conn.execute(
            "UPDATE agent_messages SET message_data = 'not json' WHERE id = "
            "(SELECT id FROM agent_messages WHERE session_id = 's' ORDER BY id LIMIT 1 OFFSET 1)"
        )
        conn.commit()
        conn.close()
        snapshot = await session.snapshot_history()
        assert snapshot.items == [user("1"), user("3")]
        assert len(snapshot.rows) == 3
        assert await session.replace_history(snapshot.prefix(2), [user("S")])
        assert await session.get_items() == [user("S")]
        # The corrupt row is not lost: the archive holds it as it was stored.
        assert archive_rows(path, "s") == [
            '{"role":"user","content":"1"}',
            "not json",
            ('{"role":"user","content":"3"}'),
        ]


async def test_idle_prune_removes_archived_rows_too(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([user("1"), user("2")])
        await session.replace_history(await session.snapshot_history(), [user("S")])
    async with open_session_store(str(path)) as store:
        assert await store.delete_idle_sessions(-0.0) == 1
    assert archive_rows(path, "s") == []
