"""Several processes on one SQLite file, and a writer killed with SIGKILL."""

from __future__ import annotations

import collections
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from turnstore import SQLiteSession

    path, name, batches, size, tasks = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])

    async def writer(session, task):
        for batch in range(batches):
            tag = f"{name}/{task}/{batch}"
            await session.add_items([{"tag": tag, "seq": i} for i in range(size)])
            print(tag, flush=True)  # printed only after the batch is committed

    async def main():
        sessions = [SQLiteSession("shared" if t % 2 else f"{name}-{t}", path) for t in range(tasks)]
        await asyncio.gather(*(writer(s, t) for t, s in enumerate(sessions)))
        for s in sessions:
            await s.aclose()

    asyncio.run(main())
    """
)


def _spawn(path: Path, name: str, batches: int, size: int, tasks: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name, str(batches), str(size), str(tasks)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _rows(path: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT id, session_id, message_data FROM agent_messages ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.slow
def test_four_processes_write_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    procs = [_spawn(path, f"p{n}", batches=20, size=5, tasks=4) for n in range(4)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert err == ""
        assert len(out.split()) == 20 * 4
    rows = _rows(path)
    assert len(rows) == 4 * 4 * 20 * 5
    assert _integrity(path) == "ok"
    # Every batch whole, and each writer's items in the order it added them.
    by_writer: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for _, _, data in rows:
        item = json.loads(data)
        proc_task, batch = item["tag"].rsplit("/", 1)
        by_writer[proc_task].append((int(batch), item["seq"]))
    assert len(by_writer) == 16
    for sequence in by_writer.values():
        assert sequence == [(b, s) for b in range(20) for s in range(5)]


@pytest.mark.slow
def test_sigkill_mid_write_leaves_whole_batches_and_keeps_committed_ones(
    tmp_path: Path,
) -> None:
    path = tmp_path / "killed.db"
    proc = _spawn(path, "k", batches=100_000, size=20, tasks=6)
    assert proc.stdout is not None
    committed: list[str] = []
    try:
        while len(committed) < 150:
            line = proc.stdout.readline()
            assert line, f"the writer exited early: {proc.stderr.read() if proc.stderr else ''}"
            committed.append(line.strip())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert _integrity(path) == "ok"
    counts = collections.Counter(json.loads(data)["tag"] for _, _, data in _rows(path))
    assert all(count == 20 for count in counts.values()), "a batch was half-written"
    missing = [tag for tag in committed if counts[tag] != 20]
    assert missing == [], "add_items returned but its batch did not survive SIGKILL"
