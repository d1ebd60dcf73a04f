"""The `turnstore` command's sub-commands: what each does with a `SessionStore`.

`turnstore.cli` parses the arguments, opens the store and maps errors to exit codes; each function
here carries out one command (`list`, `show`, `export`, `import`, `clear`, `prune`, `stats`) and
raises `CommandError` with the message the user sees.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import IO, Any

from ..exceptions import TurnstoreError
from ..memory.codec import encode_items
from ..memory.store import SessionInfo, SessionRecord, SessionStore
from .atomic_file import replaced_path, temp_beside

__all__ = ["COMMANDS", "UNITS", "CommandError", "load_export", "run"]

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
"""Seconds per unit of a duration on the command line (`prune --idle 30d`)."""


class CommandError(Exception):
    """A command could not be carried out; the message is shown to the user."""


def _count(number: int, noun: str) -> str:
    """`1 session`, `2 sessions`, `0 items`."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _time(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _list(store: SessionStore, args: argparse.Namespace) -> None:
    offset = (args.page - 1) * args.page_size
    # One more than a page tells whether there is a next page.
    infos = await store.list_sessions(offset=offset, limit=args.page_size + 1, prefix=args.prefix)
    more = len(infos) > args.page_size
    infos = infos[: args.page_size]
    if args.json:
        for info in infos:
            print(
                _dump(
                    {
                        "session_id": info.session_id,
                        "items": info.item_count,
                        "created_at": _iso(info.created_at),
                        "last_activity": _iso(info.last_activity),
                    }
                )
            )
        return
    if not infos:
        print("no sessions" if args.page == 1 else f"no sessions on page {args.page}")
        return
    # The id last: the columns before it have a fixed width, and a long id pads no other row.
    print(f"{'ITEMS':>7}  {'LAST ACTIVITY (UTC)':<19}  SESSION ID")
    for info in infos:
        print(f"{info.item_count:>7}  {_time(info.last_activity):<19}  {info.session_id}")
    first = offset + 1
    footer = f"page {args.page}: sessions {first}-{offset + len(infos)}"
    if more:
        footer += f"; next page: --page {args.page + 1}"
    print(footer)


async def _require(store: SessionStore, session_id: str) -> SessionInfo:
    info = await store.get_info(session_id)
    if info is None:
        raise CommandError(f"no session {session_id!r} in {store.target}")
    return info


async def _close(session: Any) -> None:
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()


async def _branch_records(store: SessionStore, session_id: str, branch: str) -> list[SessionRecord]:
    try:
        return await store.read_branch_records(session_id, branch)
    except ValueError as exc:
        names = ", ".join(map(repr, ["main", *await store.list_branches(session_id)]))
        raise CommandError(f"{exc} in {store.target} (its branches: {names})") from exc


async def _show(store: SessionStore, args: argparse.Namespace) -> None:
    await _require(store, args.session_id)
    if args.branch is None and store.backend != "sqlite":
        session = store.session(args.session_id)
        try:
            items = await session.get_items(args.limit)
        finally:
            await _close(session)
    else:
        # A SQLite file may hold the branches of an AdvancedSQLiteSession: show one of them.
        records = await _branch_records(store, args.session_id, args.branch or "main")
        items = [record.item for record in records]
        if args.limit is not None:
            items = items[len(items) - args.limit :] if args.limit else []
    for item in items:
        print(_dump(item))


async def _export(store: SessionStore, args: argparse.Namespace) -> None:
    if args.all:
        infos = [info async for info in store.iter_sessions()]
    else:
        infos = [await _require(store, session_id) for session_id in args.session_ids]
    if args.branch is not None:
        for info in infos:
            await _branch_records(store, info.session_id, args.branch)  # a missing branch
    if args.output:
        refuse_empty = (
            None
            if args.allow_empty
            else _nothing_to_export(store, args, f"{args.output} was left as it was")
        )
        count = await _export_to_file(store, infos, args.output, args.branch, refuse_empty)
        print(
            f"exported {_count(count, 'item')} of {_count(len(infos), 'session')} to {args.output}",
            file=sys.stderr,
        )
    else:
        count = await _write_records(store, infos, sys.stdout, args.branch)
        if not count and not args.allow_empty:
            raise CommandError(_nothing_to_export(store, args, "nothing was written"))


def _nothing_to_export(store: SessionStore, args: argparse.Namespace, outcome: str) -> str:
    session_ids: list[str] = args.session_ids
    under = f" under the key prefix {args.key_prefix!r}" if store.backend == "redis" else ""
    where = (
        f"{'the session' if len(session_ids) == 1 else 'the sessions'} "
        f"{', '.join(map(repr, session_ids))} {'holds' if len(session_ids) == 1 else 'hold'} "
        "no items"
        if session_ids
        else f"{store.target} holds no sessions{under}"
    )
    key = " and --key-prefix" if store.backend == "redis" else ""
    return (
        f"nothing to export: {where}; {outcome}. Check --db{key}, or pass --allow-empty "
        "when an empty export is what you want"
    )


async def _export_to_file(
    store: SessionStore,
    infos: list[SessionInfo],
    path: str,
    branch: str | None,
    refuse_empty: str | None,
) -> int:
    # Written to a temporary file beside the target and renamed over it only once complete: an
    # error never leaves an empty or partial backup (and never clobbers an older one). A link
    # is written through, to its target.
    path = await asyncio.to_thread(replaced_path, path)
    directory = os.path.dirname(await asyncio.to_thread(os.path.abspath, path))
    # The file's fault, said plainly and not as the store's, before the temporary file's name
    # could show up in an OSError.
    if await asyncio.to_thread(os.path.isdir, path):
        raise CommandError(f"cannot write {path}: it is a directory; give the export file's path")
    if not await asyncio.to_thread(os.path.isdir, directory):
        raise CommandError(
            f"cannot write {path}: the directory {os.path.dirname(path)!r} does not exist"
        )
    try:
        fd, temp = await asyncio.to_thread(temp_beside, path)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            count = await _write_records(store, infos, out, branch)
            if not count and refuse_empty is not None:
                # A wrong --db must not replace the last good backup with an empty file.
                raise CommandError(refuse_empty)
            await asyncio.to_thread(os.fsync, out.fileno())
        try:
            await asyncio.to_thread(os.replace, temp, path)
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return count


async def _write_records(
    store: SessionStore, infos: list[SessionInfo], out: IO[str], branch: str | None
) -> int:
    """Write each session's records: `main`, then each other branch (or only `branch`).

    The first record of a session carries the session's created and last-activity times.
    """
    count = 0
    for info in infos:
        session_id = info.session_id
        if branch is not None:
            records = await _branch_records(store, session_id, branch)
        else:
            records = await store.read_records(session_id)
            for name in await store.list_branches(session_id):
                records += await store.read_branch_records(session_id, name)
        if records:
            records[0] = dataclasses.replace(
                records[0],
                session_created_at=info.created_at,
                session_last_activity=info.last_activity,
            )
        for record in records:
            out.write(_dump(record.to_json()) + "\n")
            count += 1
    out.flush()
    return count


_Entries = dict[str, list[tuple[str, SessionRecord]]]
"""An export read into memory: per session id, its records with where each came from."""


def _read_export(lines: Iterable[bytes], source: str) -> _Entries:
    by_session: _Entries = {}
    for number, raw in enumerate(lines, start=1):
        where = f"{source} line {number}"
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise CommandError(
                f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line); "
                "an export is UTF-8 JSON Lines"
            ) from exc
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"{where}, column {exc.colno} is not JSON: {exc.msg.removesuffix(' at')}; "
                "an export has one JSON object a line"
            ) from exc
        try:
            record = SessionRecord.from_json(data, where=where)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        by_session.setdefault(record.session_id, []).append((where, record))
    return by_session


def load_export(path: str) -> _Entries:
    """Read an export file (`-` for stdin), every line checked, before anything is opened.

    Raises:
        CommandError: The file cannot be read (`cannot read FILE: ...`, as an export says
            `cannot write FILE: ...`), a line is not a record, or it holds no record at all.
    """
    if path == "-":
        entries = _read_export(sys.stdin.buffer, "stdin")
    else:
        if os.path.isdir(path):
            raise CommandError(
                f"cannot read {path}: it is a directory; give the export file's path"
            )
        try:
            with open(path, "rb") as source:
                entries = _read_export(source, path)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not entries:
        raise CommandError(
            f"nothing to import: {'stdin' if path == '-' else path} holds no records "
            "(an export has one JSON object a line); nothing was written"
        )
    return entries


async def _import(store: SessionStore, args: argparse.Namespace) -> None:
    by_session: _Entries = args.records
    # 1. Everything is known storable before the first write: each session id (by the same
    #    checks the backend's session applies) and each item (by the codec every write uses).
    for session_id, entries in by_session.items():
        where = entries[0][0]
        try:
            await _close(store.session(session_id))
        except (TypeError, ValueError) as exc:
            # The session's own message may already say it ("session_id '…' cannot be stored: …").
            reason = str(exc).removeprefix(f"session_id {session_id!r} cannot be stored: ")
            raise CommandError(
                f"{where}: session id {session_id!r} cannot be stored: {reason}"
            ) from exc
        for line, record in entries:
            try:
                encode_items([record.item])
            except TypeError as exc:
                reason = str(exc).removeprefix("item 0 ")
                raise CommandError(f"{line}: the item cannot be stored: it {reason}") from exc
        try:
            store.check_records(session_id, [record for _, record in entries])
        except ValueError as exc:
            raise CommandError(f"{where}: {exc}. Nothing was imported") from exc
    # 2. A plain import never mixes a file into sessions that already hold items.
    occupied = []
    for session_id in by_session:
        info = await store.get_info(session_id)
        if info is not None and info.item_count:
            occupied.append(f"{session_id!r} ({_count(info.item_count, 'item')})")
    if occupied and not (args.append or args.replace):
        raise CommandError(
            f"nothing imported: {len(occupied)} of the file's sessions already "
            f"{'holds' if len(occupied) == 1 else 'hold'} items in "
            f"{store.target}: {_some(occupied)}. Pass --append to add to them, or "
            "--replace to replace their items"
        )
    # 3. One transaction per session (one script on Redis): a session is written whole or not.
    done: list[str] = []
    total = 0
    args.interrupts.describe = lambda: _imported(done, len(by_session), args.append)
    for session_id, entries in by_session.items():
        records = [record for _, record in entries]
        write = asyncio.ensure_future(
            store.write_records(session_id, records, replace=args.replace)
        )
        try:
            # Shielded: an interrupt lets this session's write end (whole, or not at all) and
            # then stops the import, which says what it wrote.
            await asyncio.shield(write)
        except asyncio.CancelledError:
            await asyncio.wait([write])
            if not write.cancelled() and write.exception() is None:
                done.append(session_id)
            raise
        except (TurnstoreError, TypeError, ValueError, OSError) as exc:
            raise CommandError(
                f"importing session {session_id!r} failed, nothing of it was written: {exc}. "
                f"{_imported(done, len(by_session), args.append)}"
            ) from exc
        done.append(session_id)
        total += len(records)
    print(
        f"imported {_count(total, 'item')} into {_count(len(by_session), 'session')}",
        file=sys.stderr,
    )


def _imported(done: list[str], total: int, append: bool) -> str:
    """What an import that stopped wrote (`done`, of `total` sessions) and how to finish it."""
    if not done:
        return "nothing was imported"
    if len(done) == total:
        return f"every session of the file was imported ({total})"
    written = (
        f"{len(done)} of {_count(total, 'session')} {'was' if len(done) == 1 else 'were'} "
        f"imported, each whole ({_some([repr(d) for d in done])}); the others were not written"
    )
    if append:
        return (
            f"{written}. Importing the file again with --append would add the items of those "
            f"{len(done)} again: import only the other sessions' lines"
        )
    return f"{written}. Run the same import with --replace to finish it"


def _some(names: list[str], shown: int = 5) -> str:
    """The first few of `names` and how many more: `'a', 'b' and 1,998 more`."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more:,} more" if more > 0 else "")


async def _clear(store: SessionStore, args: argparse.Namespace) -> None:
    info = await _require(store, args.session_id)
    session = store.session(args.session_id)
    try:
        await session.clear_session()
    finally:
        await _close(session)
    print(f"cleared session {args.session_id!r} ({_count(info.item_count, 'item')})")


async def _prune(store: SessionStore, args: argparse.Namespace) -> None:
    seconds = int(args.idle.total_seconds())
    unit = next(u for u in "dhms" if seconds % UNITS[u] == 0) if seconds else "s"
    age = f"{seconds // UNITS[unit]}{unit}"
    if args.dry_run:
        idle = await store.find_idle_sessions(args.idle)
        for info in idle:
            print(
                f"would delete {info.session_id!r} ({_count(info.item_count, 'item')}, "
                f"last activity {_time(info.last_activity)} UTC)"
            )
        print(
            f"dry run: {_count(len(idle), 'session')} idle for more than {age} "
            "would be deleted; nothing was deleted"
        )
        return
    deleted = await store.delete_idle_sessions(args.idle)
    print(f"deleted {_count(deleted, 'session')} idle for more than {age}")


async def _stats(store: SessionStore, args: argparse.Namespace) -> None:
    stats = await store.stats()
    if args.json:
        print(
            _dump(
                {
                    "backend": stats.backend,
                    "target": store.target,
                    "sessions": stats.sessions,
                    "items": stats.items,
                    "last_activity": _iso(stats.last_activity),
                }
            )
        )
        return
    print(f"storage:       {stats.backend} ({store.target})")
    print(f"sessions:      {stats.sessions}")
    print(f"items:         {stats.items}")
    last = _time(stats.last_activity)
    print(f"last activity: {last}{' UTC' if stats.last_activity else ''}")


Handler = Callable[[SessionStore, argparse.Namespace], Awaitable[None]]

COMMANDS: dict[str, Handler] = {
    "list": _list,
    "show": _show,
    "export": _export,
    "import": _import,
    "clear": _clear,
    "stats": _stats,
    "prune": _prune,
}
"""Each sub-command's function."""


async def run(store: SessionStore, args: argparse.Namespace) -> None:
    """Carry out `args.command` on `store` (the caller closes it).

    Args:
        store: The opened storage.
        args: The parsed command line (`args.records` holds an import's file, read already;
            an import sets `args.interrupts.describe` to say what it has written).
    """
    if args.command != "import":  # import creates the tables
        await _require_tables(store)
    await COMMANDS[args.command](store, args)


async def _require_tables(store: SessionStore) -> None:
    """A SQL storage without the tables is a wrong --db or table name, never an empty result."""
    missing = await store.missing_tables()
    if missing:
        names = " and ".join(map(repr, missing))
        raise CommandError(
            f"{store.target} has no table {names}: no session was ever stored there under "
            f"{'this name' if len(missing) == 1 else 'these names'}. Check --db, "
            "--sessions-table and --messages-table (an application's first write creates the "
            "tables, as does turnstore import)"
        )
