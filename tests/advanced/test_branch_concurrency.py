"""AdvancedSQLiteSession with writers on different branches of one session at once.

Several processes (each its own AdvancedSQLiteSession on one file) and several objects in one
process write on their own branches and on `main` together; every branch must read the shared
prefix and then exactly its own writes, in order. A `switch_to_branch` racing `add_items` on one
object must put the item on one branch only, and a cancelled `create_branch_from_turn` must
leave the session whole: the branch is absent, or present and holding the whole prefix.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from turnstore.extensions.memory import AdvancedSQLiteSession

WRITES = 25

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from turnstore.extensions.memory import AdvancedSQLiteSession

    async def main(path, name):
        session = AdvancedSQLiteSession("s", path)
        if name != "main":
            await session.create_branch_from_turn(2, name)
        for n in range(int(sys.argv[3])):
            await session.add_items([{"role": "user", "content": f"{name}-{n}"}])
            if n % 7 == 6:
                await session.pop_item()
                await session.add_items([{"role": "user", "content": f"{name}-{n}"}])
        session.close()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


PREFIX = [user("one"), {"role": "assistant", "content": "a"}, user("two")]


async def seed(path: Path) -> None:
    session = AdvancedSQLiteSession("s", path)
    try:
        await session.add_items(PREFIX)
    finally:
        session.close()


def test_processes_write_on_their_own_branches_at_once(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
    asyncio.run(seed(path))
    names = ["main", "p1", "p2", "p3"]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), name, str(WRITES)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err

    async def check() -> None:
        session = AdvancedSQLiteSession("s", path)
        try:
            own = {name: [user(f"{name}-{n}") for n in range(WRITES)] for name in names}
            assert await session.get_items(branch_id="main") == PREFIX + own["main"]
            for name in names[1:]:
                assert await session.get_items(branch_id=name) == PREFIX[:2] + own[name]
            listed = {b["branch_id"] for b in await session.list_branches()}
            assert listed == set(names)
        finally:
            session.close()

    asyncio.run(check())


async def test_objects_in_one_process_write_on_their_own_branches(tmp_path: Path) -> None:
    path = tmp_path / "objects.db"
    await seed(path)
    sessions = [AdvancedSQLiteSession("s", path) for _ in range(4)]
    try:
        names = ["main", "o1", "o2", "o3"]
        for session, name in zip(sessions[1:], names[1:], strict=True):
            await session.create_branch_from_turn(2, name)

        async def write(session: AdvancedSQLiteSession, name: str) -> None:
            for n in range(WRITES):
                await session.add_items([user(f"{name}-{n}")])

        await asyncio.gather(*(write(s, n) for s, n in zip(sessions, names, strict=True)))
        own = {name: [user(f"{name}-{n}") for n in range(WRITES)] for name in names}
        reader = sessions[0]
        assert await reader.get_items() == PREFIX + own["main"]
        for name in names[1:]:
            assert await reader.get_items(branch_id=name) == PREFIX[:2] + own[name]
    finally:
        for session in sessions:
            session.close()


async def test_switch_racing_add_items_puts_each_item_on_one_branch(tmp_path: Path) -> None:
    session = AdvancedSQLiteSession("s", tmp_path / "race.db")
    try:
        await session.add_items(PREFIX)
        await session.create_branch_from_turn(2, "b")
        await session.switch_to_branch("main")
        added: list[tuple[str, dict[str, Any]]] = []

        async def add(n: int) -> None:
            item = user(f"x{n}")
            added.append((session.current_branch_id, item))
            await session.add_items([item])

        jobs = []
        for n in range(30):
            jobs.append(add(n))
            jobs.append(session.switch_to_branch("b" if n % 2 == 0 else "main"))
        await asyncio.gather(*jobs)
        main_items = await session.get_items(branch_id="main")
        branch_items = await session.get_items(branch_id="b")
        assert main_items == PREFIX + [item for name, item in added if name == "main"]
        assert branch_items == PREFIX[:2] + [item for name, item in added if name == "b"]
    finally:
        session.close()


@pytest.mark.parametrize("steps", range(6))
async def test_a_cancelled_create_branch_leaves_the_session_whole(
    tmp_path: Path, steps: int
) -> None:
    session = AdvancedSQLiteSession("s", tmp_path / "cancel.db")
    try:
        await session.add_items(PREFIX)
        task = asyncio.ensure_future(session.create_branch_from_turn(2, "c"))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        names = {b["branch_id"] for b in await session.list_branches()}
        if "c" in names:
            assert await session.get_items(branch_id="c") == PREFIX[:2]
        else:
            assert session.current_branch_id == "main"
            assert await session.create_branch_from_turn(2, "c") == "c"
        await session.add_items([user("after")])
        assert await session.get_items(branch_id="main") in (PREFIX, [*PREFIX, user("after")])
    finally:
        session.close()
