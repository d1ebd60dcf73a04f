"""Benchmark: turnstore' SQLiteSession against the OpenAI Agents SDK's, in one run.

Both run the same workloads on a file database in a fresh temporary directory, and each figure is
printed with the ratio between them. Run it with `make bench` (or `python bench/bench_sqlite.py`).

Targets (from issue 2): concurrent adds >= 5x the peer's throughput; sequential adds >= 1x; full
get_items >= 2x; get_items(20) flat (100k / 1k time <= 1.5); worst event-loop lag <= 10 ms. Full
reads are measured for small and nested items, each beside its floor: one `json.loads` of the same
history. `--only reads` runs the read cases alone.

What each figure judges in the engine (`memory/sqlite/database.py`, one thread, one queue and one
connection per file): the concurrent adds judge group commit (the waiting writes share one
transaction: kept, it measured 7.0x the SDK against 3.0x without it); the full reads' process CPU
time judged the rows joined with a random marker (removed: it measured 1.29x the SDK's CPU
against 0.98-1.11x per-row decoding, and the 2x target failed either way); the limited reads and the
worst lag judge the reads' chunks and the thread hand-off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents.memory import SQLiteSession as PeerSession

from turnstore import SQLiteSession as OurSession

Factory = Callable[[str, Path], Any]


def item(n: int) -> dict[str, Any]:
    """A realistic assistant message of about 300 bytes."""
    return {
        "type": "message",
        "id": f"msg_{n:08d}",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": f"Reply {n}: the Golden Gate Bridge is in San Francisco, California.",
                "annotations": [],
            }
        ],
    }


def nested_item(n: int) -> dict[str, Any]:
    """An assistant message of about 1.2 KB: three text parts, each with two URL citations."""
    return {
        "type": "message",
        "id": f"msg_{n:08d}",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": f"Part {part} of reply {n}: the Golden Gate Bridge is in San Francisco.",
                "annotations": [
                    {
                        "type": "url_citation",
                        "start_index": 10 * cite,
                        "end_index": 10 * cite + 9,
                        "title": f"Source {cite}",
                        "url": f"https://example.com/{n}/{part}/{cite}",
                    }
                    for cite in range(2)
                ],
            }
            for part in range(3)
        ],
    }


SHAPES: dict[str, Callable[[int], dict[str, Any]]] = {"small": item, "nested": nested_item}
"""The item shapes that full reads are measured with."""


async def close(session: Any) -> None:
    result = session.close()
    if asyncio.iscoroutine(result):
        await result


class LagMonitor:
    """Measures how late the event loop wakes a task that sleeps 1 ms at a time."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    @property
    def worst(self) -> float:
        return max(self.lags, default=0.0)

    @property
    def p99(self) -> float:
        return statistics.quantiles(self.lags, n=100)[98] if len(self.lags) > 1 else self.worst

    async def _run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            self.lags.append(max(0.0, time.perf_counter() - start - 0.001))

    def __enter__(self) -> LagMonitor:
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def sequential_adds(make: Factory, directory: Path, n: int) -> float:
    session = make("sequential", directory / "sequential.db")
    await session.get_items()  # schema created outside the timing
    start = time.perf_counter()
    for i in range(n):
        await session.add_items([item(i)])
    elapsed = time.perf_counter() - start
    assert len(await session.get_items()) == n
    await close(session)
    return n / elapsed


async def concurrent_adds(
    make: Factory, directory: Path, sessions: int, adds: int
) -> tuple[float, float, float]:
    path = directory / "concurrent.db"
    objects = [make(f"session-{s}", path) for s in range(sessions)]
    for session in objects:
        await session.get_items()

    async def writer(session: Any) -> None:
        for i in range(adds):
            await session.add_items([item(i)])

    with LagMonitor() as lag:
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        await asyncio.gather(*(writer(session) for session in objects))
        elapsed = time.perf_counter() - start
    for session in objects:
        assert len(await session.get_items()) == adds
        await close(session)
    return sessions * adds / elapsed, lag.worst, lag.p99


async def idle_lag(seconds: float) -> tuple[float, float]:
    """The loop lag with no work at all: how noisy the machine itself is."""
    with LagMonitor() as lag:
        await asyncio.sleep(seconds)
    return lag.worst, lag.p99


async def populate(session: Any, n: int, shape: Callable[[int], dict[str, Any]] = item) -> None:
    batch = 1000
    for first in range(0, n, batch):
        await session.add_items([shape(i) for i in range(first, min(n, first + batch))])


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def timed_full(call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """The wall-clock and process CPU time of one full read, after a full collection (untimed).

    A full read creates hundreds of thousands of objects, so the collector's full passes take
    most of its time, and how many run depends on what earlier calls left: collecting first
    starts every contender from the same state. The CPU time (all threads of the process) is
    what the read costs, whatever the load of a shared machine does to the wall clock.
    """
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    await call()
    return time.perf_counter() - start, time.process_time() - cpu


def history_text(path: Path, session_id: str) -> str:
    """A session's history as one JSON array text, as the peer stores it (for the floor)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(
            "SELECT message_data FROM agent_messages WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()
    return "[" + ",".join(row[0] for row in rows) + "]"


async def reads(
    makers: dict[str, Factory],
    directory: Path,
    big: int,
    small: int,
    rounds: int,
    shapes: list[str],
) -> dict[str, dict[str, float]]:
    """Read figures, measured in alternating rounds so that machine load hits both alike.

    Full reads are measured for each item shape, next to the floor: one `json.loads` of the
    same history (already joined into one JSON array) on a worker thread.
    """
    sessions: dict[str, dict[str, Any]] = {}
    floors: dict[str, str] = {}
    for name, make in makers.items():
        path = directory / f"reads-{name}.db"
        sessions[name] = {"small": make("small", path)}
        await populate(sessions[name]["small"], small)
        for shape in shapes:
            large = make(f"large-{shape}", path)
            await populate(large, big, SHAPES[shape])
            assert len(await large.get_items()) == big
            assert len(await large.get_items(20)) == 20
            sessions[name][shape] = large
            if name == "peer":
                floors[shape] = await asyncio.to_thread(history_text, path, f"large-{shape}")
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in [*makers, "floor"]}
    for round_ in range(rounds):
        order = [*makers, "floor"] if round_ % 2 == 0 else ["floor", *reversed(makers)]
        for name in order:
            figures = samples[name]
            for shape in shapes:
                if name == "floor":
                    read = partial(asyncio.to_thread, json.loads, floors[shape])
                else:
                    read = sessions[name][shape].get_items
                wall, cpu = await timed_full(read)
                figures.setdefault(f"full_{shape}", []).append(wall)
                figures.setdefault(f"cpu_{shape}", []).append(cpu)
            if name == "floor":
                continue
            own = sessions[name]
            limited = partial(own["small"].get_items, 20)
            figures.setdefault("limit_small", []).append(await timed(limited, 100))
            limited = partial(own[shapes[0]].get_items, 20)
            figures.setdefault("limit_large", []).append(await timed(limited, 100))
    for own in sessions.values():
        for session in own.values():
            await close(session)
    return {
        name: {key: statistics.median(values) for key, values in figures.items()}
        for name, figures in samples.items()
    }


async def pops(make: Factory, directory: Path, n: int) -> float:
    session = make("pops", directory / "pops.db")
    await populate(session, n)
    start = time.perf_counter()
    for _ in range(n):
        assert await session.pop_item() is not None
    elapsed = time.perf_counter() - start
    assert await session.pop_item() is None
    await close(session)
    return n / elapsed


def line(label: str, ours: float, peer: float, unit: str, higher_is_better: bool = True) -> float:
    ratio = ours / peer if higher_is_better else peer / ours
    print(
        f"{label:<44} ours {ours:>12,.1f} {unit:<9} peer {peer:>12,.1f} {unit:<9} "
        f"ratio {ratio:6.2f}x"
    )
    return ratio


async def run(args: argparse.Namespace) -> int:
    makers: dict[str, Factory] = {
        "ours": lambda sid, path: OurSession(sid, path),
        "peer": lambda sid, path: PeerSession(sid, path),
    }
    shapes = [shape.strip() for shape in args.shapes.split(",") if shape.strip()]
    unknown = sorted(set(shapes) - set(SHAPES))
    if unknown or not shapes:
        raise SystemExit(f"--shapes: give some of {', '.join(SHAPES)}; got {args.shapes!r}")
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
        directory = Path(tmp)
        writes = None if args.only == "reads" else await write_workloads(makers, directory, args)
        read = await reads(makers, directory, args.big, args.small, args.rounds, shapes)
    print(
        f"SQLite file database; {os.cpu_count()} CPUs; median of {args.rounds} alternating "
        "rounds (worst lag: the worst of all rounds)\n"
    )
    checks = [] if writes is None else write_lines(writes, args)
    checks += read_lines(read, args, shapes)
    if writes is not None:
        ours, peer = writes["ours"], writes["peer"]
        line(f"{args.pops} pop_item", ours["pops"], peer["pops"], "pops/s")
        print(
            f"{'worst event-loop lag, concurrent adds':<44} ours {ours['lag'] * 1000:>12.2f} "
            f"{'ms':<9} peer {peer['lag'] * 1000:>12.2f} ms"
        )
        print(
            f"{'p99 event-loop lag, concurrent adds':<44} ours {ours['lag_p99'] * 1000:>12.2f} "
            f"{'ms':<9} peer {peer['lag_p99'] * 1000:>12.2f} ms"
        )
        idle_worst, idle_p99 = await idle_lag(2.0)
        print(
            f"{'idle event-loop lag (machine noise), 2 s':<44} worst {idle_worst * 1000:>11.2f} ms"
            f"        p99 {idle_p99 * 1000:>12.2f} ms"
        )
        checks.append(("worst loop lag <= 10 ms", ours["lag"] <= 0.010))
    print()
    for label, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}")
    return 0 if all(ok for _, ok in checks) else 1


async def write_workloads(
    makers: dict[str, Factory], directory: Path, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Write figures: alternate ours and the peer each round, keep the median."""
    samples: dict[str, dict[str, list[float]]] = {
        name: {"sequential": [], "concurrent": [], "lag": [], "lag_p99": [], "pops": []}
        for name in makers
    }
    for round_ in range(args.rounds):
        order = list(makers) if round_ % 2 == 0 else list(reversed(makers))
        for name in order:
            make = makers[name]
            where = directory / f"{name}-{round_}"
            where.mkdir()
            figures = samples[name]
            figures["sequential"].append(await sequential_adds(make, where, args.sequential))
            throughput, lag, p99 = await concurrent_adds(make, where, args.sessions, args.adds)
            figures["concurrent"].append(throughput)
            figures["lag"].append(lag)
            figures["lag_p99"].append(p99)
            figures["pops"].append(await pops(make, where, args.pops))
    results: dict[str, dict[str, float]] = {}
    for name, figures in samples.items():
        results[name] = {key: statistics.median(values) for key, values in figures.items()}
        results[name]["lag"] = max(figures["lag"])  # the worst lag of any round
    return results


def write_lines(
    results: dict[str, dict[str, float]], args: argparse.Namespace
) -> list[tuple[str, bool]]:
    ours, peer = results["ours"], results["peer"]
    concurrent = line(
        f"{args.sessions} sessions x {args.adds} concurrent adds",
        ours["concurrent"],
        peer["concurrent"],
        "adds/s",
    )
    sequential = line(
        f"{args.sequential} sequential single-item adds",
        ours["sequential"],
        peer["sequential"],
        "adds/s",
    )
    return [("concurrent adds >= 5x", concurrent >= 5), ("sequential adds >= 1x", sequential >= 1)]


def read_lines(
    results: dict[str, dict[str, float]], args: argparse.Namespace, shapes: list[str]
) -> list[tuple[str, bool]]:
    ours, peer, floor = results["ours"], results["peer"], results["floor"]
    checks = []
    for shape in shapes:
        key = f"full_{shape}"
        ratio = line(
            f"get_items() of {args.big:,} {shape} items",
            ours[key] * 1000,
            peer[key] * 1000,
            "ms",
            higher_is_better=False,
        )
        line(
            "  floor: one json.loads of that history",
            floor[key] * 1000,
            peer[key] * 1000,
            "ms",
            higher_is_better=False,
        )
        line(
            "  process CPU time of the same reads",
            ours[f"cpu_{shape}"] * 1000,
            peer[f"cpu_{shape}"] * 1000,
            "ms",
            higher_is_better=False,
        )
        line(
            "  floor, process CPU time",
            floor[f"cpu_{shape}"] * 1000,
            peer[f"cpu_{shape}"] * 1000,
            "ms",
            higher_is_better=False,
        )
        print(
            f"{'  ours / floor, wall (CPU) (1.00 = at it)':<44} "
            f"{ours[key] / floor[key]:>17.2f} ({ours[f'cpu_{shape}'] / floor[f'cpu_{shape}']:.2f})"
        )
        checks.append((f"full get_items of {shape} items >= 2x", ratio >= 2))
    line(
        f"get_items(20) of {args.small:,} items",
        ours["limit_small"] * 1e6,
        peer["limit_small"] * 1e6,
        "us",
        higher_is_better=False,
    )
    line(
        f"get_items(20) of {args.big:,} items",
        ours["limit_large"] * 1e6,
        peer["limit_large"] * 1e6,
        "us",
        higher_is_better=False,
    )
    flat = ours["limit_large"] / ours["limit_small"]
    peer_flat = peer["limit_large"] / peer["limit_small"]
    print(
        f"{'get_items(20) 100k / 1k time':<44} ours {flat:>12.2f} {'':<9} peer {peer_flat:>12.2f}"
    )
    checks.append(("get_items(20) 100k/1k <= 1.5", flat <= 1.5))
    return checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", choices=["all", "reads"], default="all", help="reads: skip writes"
    )
    parser.add_argument(
        "--shapes",
        default="small,nested",
        help=f"item shapes for full reads, comma-separated ({', '.join(SHAPES)})",
    )
    parser.add_argument("--sequential", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--adds", type=int, default=40)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--pops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per figure")
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
