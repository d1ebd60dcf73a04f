"""One way into a SQLite file: the store's jobs run on the file's `SQLiteDatabase`.

The command line's store (export, import, prune, stats) shares the threads of the sessions on
the file, so it gets their busy timeout, WAL set-up and fork gate; and the plain
`SQLiteSession` does not depend on the tables of its subclass.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.items import user
from turnstore import SessionStorageError, SQLiteSession
from turnstore.admin import SessionRecord, open_session_store
from turnstore.memory.sqlite import database, forkgate

SRC = Path(__file__).resolve().parents[2] / "src"


async def test_a_prune_on_a_locked_file_gives_up_after_the_databases_busy_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "locked.db"
    async with SQLiteSession("s", db) as session:
        await session.add_items([user("a")])
    # The database's own limits, made short: the store's job follows them (not a timeout of
    # its own, which was 30 seconds).
    monkeypatch.setattr(database, "BUSY_RETRY_SECONDS", 0.2)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        async with open_session_store(db) as store:
            with pytest.raises(SessionStorageError, match="locked"):
                # The bound only keeps a regression from hanging the suite.
                await asyncio.wait_for(store.delete_idle_sessions(0), timeout=20)
    finally:
        other.execute("ROLLBACK")
        other.close()


async def test_an_import_into_a_new_file_sets_up_wal(tmp_path: Path) -> None:
    db = tmp_path / "imported.db"
    async with open_session_store(db, create=True) as store:
        await store.write_records("s", [SessionRecord("s", user("a"), None)])  # type: ignore[arg-type]
    conn = sqlite3.connect(db)
    try:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    finally:
        conn.close()
    assert mode == "wal"


async def test_store_jobs_hold_off_fork_like_session_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "gated.db"
    async with SQLiteSession("s", db) as session:
        await session.add_items([user("a")])
    gated: list[str] = []
    real = forkgate.transaction

    @contextlib.contextmanager
    def watched() -> Iterator[None]:
        gated.append(threading.current_thread().name)
        with real():
            yield

    monkeypatch.setattr(forkgate, "transaction", watched)
    async with open_session_store(db) as store:
        assert (await store.stats()).items == 1  # a read
        assert await store.delete_idle_sessions(0) == 1  # a write
    assert len(gated) >= 2
    assert all(name.startswith("turnstore-sqlite-") for name in gated)


def _imports(module: str) -> set[str]:
    """The modules of the package that `module` imports, inside functions included."""
    path = SRC.joinpath(*module.split("."))
    package = path.is_dir()
    file = path / "__init__.py" if package else path.with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = module.split(".")
            keep = len(parts) - node.level + (1 if package else 0)
            base = node.module or "" if node.level == 0 else ".".join(parts[:keep])
            if node.level and node.module:
                base = f"{base}.{node.module}"
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            target = SRC.joinpath(*name.split("."))
            if target.with_suffix(".py").is_file() or (target / "__init__.py").is_file():
                found.add(name)
    return found


def test_the_plain_session_does_not_import_the_branch_tables() -> None:
    seen: set[str] = set()
    todo = ["turnstore.memory.sqlite.session"]
    while todo:
        module = todo.pop()
        if module in seen or module == "turnstore":
            continue  # the package's __init__ re-exports everything: not a dependency
        seen.add(module)
        todo += _imports(module)
    assert "turnstore.memory.sqlite.schema" in seen
    assert not [m for m in seen if m.startswith("turnstore.memory.sqlite.advanced")], sorted(seen)
