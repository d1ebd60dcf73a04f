"""Random branch operations on AdvancedSQLiteSession, checked against a copying model.

The model keeps a full copy of every branch (what the SDK's session does); ours shares prefixes.
After every operation, every living branch must read exactly what the model holds, turn numbers
must match the items, and once only `main` is left no row of another branch may remain.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from support.items import user
from turnstore.extensions.memory import AdvancedSQLiteSession


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


async def check(session: AdvancedSQLiteSession, model: dict[str, list[Any]], cur: str) -> None:
    assert session.current_branch_id == cur
    listed = {b["branch_id"] for b in await session.list_branches()}
    assert set(model) - {"main"} <= listed
    for name, items in model.items():
        assert await session.get_items(branch_id=name) == items, name
        turns = await session.get_conversation_turns(branch_id=name)
        users = [item for item in items if item["role"] == "user"]
        assert [t["full_content"] for t in turns] == [u["content"] for u in users]
        assert [t["turn"] for t in turns] == list(range(1, len(users) + 1))
        if items:
            assert await session.get_items(2, branch_id=name) == items[-2:]


@pytest.mark.parametrize("seed", range(40))
async def test_random_branch_operations_match_a_copying_model(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "model.db"
    session = AdvancedSQLiteSession("s", path)
    model: dict[str, list[Any]] = {"main": []}
    cur = "main"
    serial = 0
    try:
        for _step in range(70):
            op = rng.choice(
                [
                    "add",
                    "add",
                    "add",
                    "pop",
                    "branch",
                    "branch",
                    "switch",
                    "delete",
                    "replace",
                    "reopen",
                ]
            )
            if op == "add":
                batch = []
                for _ in range(rng.randint(1, 3)):
                    serial += 1
                    make = user if rng.random() < 0.5 else reply
                    batch.append(make(f"m{serial}"))
                await session.add_items(batch)
                model[cur] += batch
            elif op == "pop":
                expected = model[cur].pop() if model[cur] else None
                assert await session.pop_item() == expected
            elif op == "branch":
                users = [i for i, item in enumerate(model[cur]) if item["role"] == "user"]
                if not users:
                    continue
                turn = rng.randint(1, len(users))
                serial += 1
                name = f"b{serial}"
                assert await session.create_branch_from_turn(turn, name) == name
                model[name] = model[cur][: users[turn - 1]]
                cur = name
            elif op == "switch":
                cur = rng.choice(sorted(model))
                await session.switch_to_branch(cur)
            elif op == "delete":
                victims = sorted(set(model) - {"main"})
                if not victims:
                    continue
                victim = rng.choice(victims)
                await session.delete_branch(victim, force=True)
                del model[victim]
                if victim == cur:
                    cur = "main"
            elif op == "replace":
                snapshot = await session.snapshot_history()
                keep = rng.randint(1, len(snapshot.items)) if snapshot.items else 0
                serial += 1
                fresh = [user(f"summary{serial}")]
                part = snapshot.prefix(keep) if keep else snapshot
                assert await session.replace_history(part, fresh)
                model[cur] = fresh + model[cur][keep:]
            else:
                session.close()
                session = AdvancedSQLiteSession("s", path)
                if cur != "main":
                    await session.switch_to_branch(cur)
            await check(session, model, cur)
        for name in sorted(set(model) - {"main"}):
            await session.delete_branch(name, force=True)
        await check(session, {"main": model["main"]}, "main")
    finally:
        session.close()
    with sqlite3.connect(path) as conn:
        (rows,) = conn.execute("SELECT COUNT(*) FROM agent_messages").fetchone()
    assert rows == len(model["main"]), "rows of deleted branches were left behind"
