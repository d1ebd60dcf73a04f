"""The `turnstore` command: list, show, export, import, clear and count stored sessions.

Works on a SQLite file, a PostgreSQL (or other SQLAlchemy) URL or a Redis URL, given with `--db`
or the `TURNSTORE_DB` environment variable:

```bash
turnstore --db conversations.db list
turnstore --db postgresql://postgres@localhost/app show user-123 --limit 5
turnstore --db redis://localhost:6379/0 export --all -o backup.jsonl
turnstore --db postgresql://postgres@localhost/app import backup.jsonl
```

An export is JSON Lines, one item per line:
`{"session_id": "...", "created_at": "2026-11-29T10:00:00.123000+00:00", "item": {...}}`.
Importing it into any backend gives back the same sessions, items, order and `created_at`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import IO, Any

from .exceptions import TurnstoreError
from .memory.store import SessionInfo, SessionRecord, SessionStore, open_session_store

__all__ = ["build_parser", "main"]

_ENV_TARGET = "TURNSTORE_DB"
_IMPORT_CHUNK = 1000


class CommandError(Exception):
    """A command could not be carried out; the message is shown to the user."""


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the `turnstore` command.

    Returns:
        The parser, with one sub-command per action.
    """
    parser = argparse.ArgumentParser(
        prog="turnstore",
        description="Inspect and move the sessions stored in SQLite, PostgreSQL or Redis.",
        epilog=f"The storage can also be given in the {_ENV_TARGET} environment variable.",
    )
    parser.add_argument(
        "--db",
        metavar="TARGET",
        default=os.environ.get(_ENV_TARGET),
        help="a SQLite file, a SQLAlchemy URL (postgresql://user@host/db) or a Redis URL "
        "(redis://host:6379/0)",
    )
    parser.add_argument("--sessions-table", default="agent_sessions", help="SQL sessions table")
    parser.add_argument("--messages-table", default="agent_messages", help="SQL messages table")
    parser.add_argument("--key-prefix", default="agent_sessions", help="Redis key prefix")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list sessions, most recently active first")
    listing.add_argument("--page", type=_positive, default=1, help="page number (from 1)")
    listing.add_argument("--page-size", type=_positive, default=50, help="sessions per page")
    listing.add_argument("--json", action="store_true", help="print JSON Lines")

    show = commands.add_parser("show", help="print a session's items, one JSON object a line")
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--limit", type=_non_negative, help="only the latest N items")

    export = commands.add_parser("export", help="write sessions as JSON Lines")
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("session_ids", metavar="ID", nargs="*", default=[])
    which.add_argument("--all", action="store_true", help="every session")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    imports = commands.add_parser("import", help="append the items of a JSON Lines export")
    imports.add_argument("file", metavar="FILE", help="the export to read ('-' for stdin)")
    imports.add_argument("--replace", action="store_true", help="clear each imported session first")

    clear = commands.add_parser("clear", help="remove every item of a session")
    clear.add_argument("session_id", metavar="ID")

    stats = commands.add_parser("stats", help="count sessions and items")
    stats.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: The arguments (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0 on success, 1 when the command failed (a missing session, a storage
        error), 2 for a usage error (a bad option or storage target).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.db:
        parser.error(f"no storage given: pass --db TARGET or set {_ENV_TARGET}")
    if args.command == "import":
        try:
            args.records = _load_export(args.file)
        except (CommandError, OSError, UnicodeDecodeError) as exc:
            print(f"turnstore: error: {exc}", file=sys.stderr)
            return 1
    try:
        store = open_session_store(
            args.db,
            sessions_table=args.sessions_table,
            messages_table=args.messages_table,
            key_prefix=args.key_prefix,
            create=args.command == "import",
        )
    except (ValueError, TypeError, FileNotFoundError, ImportError) as exc:
        print(f"turnstore: error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_run(store, args))
    except (CommandError, TurnstoreError, ValueError, TypeError, OSError) as exc:
        print(f"turnstore: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


async def _run(store: SessionStore, args: argparse.Namespace) -> None:
    try:
        handler = {
            "list": _list,
            "show": _show,
            "export": _export,
            "import": _import,
            "clear": _clear,
            "stats": _stats,
        }[args.command]
        await handler(store, args)
    finally:
        await store.close()


def _time(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _list(store: SessionStore, args: argparse.Namespace) -> None:
    offset = (args.page - 1) * args.page_size
    # One more than a page tells whether there is a next page.
    infos = await store.list_sessions(offset=offset, limit=args.page_size + 1)
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
    width = max(10, *(len(info.session_id) for info in infos))
    print(f"{'SESSION ID':<{width}}  {'ITEMS':>7}  LAST ACTIVITY (UTC)")
    for info in infos:
        print(f"{info.session_id:<{width}}  {info.item_count:>7}  {_time(info.last_activity)}")
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
    close = getattr(session, "close", None)
    if close is not None:
        await close()


async def _show(store: SessionStore, args: argparse.Namespace) -> None:
    await _require(store, args.session_id)
    session = store.session(args.session_id)
    try:
        items = await session.get_items(args.limit)
    finally:
        await _close(session)
    for item in items:
        print(_dump(item))


async def _export(store: SessionStore, args: argparse.Namespace) -> None:
    if args.all:
        session_ids = [info.session_id async for info in _all_sessions(store)]
    else:
        for session_id in args.session_ids:
            await _require(store, session_id)
        session_ids = list(args.session_ids)
    if args.output:
        out = await asyncio.to_thread(open, args.output, "w", encoding="utf-8")
        try:
            count = await _write_records(store, session_ids, out)
        finally:
            out.close()
        print(
            f"exported {count} items of {len(session_ids)} sessions to {args.output}",
            file=sys.stderr,
        )
    else:
        await _write_records(store, session_ids, sys.stdout)


async def _all_sessions(store: SessionStore) -> Any:
    offset, page = 0, 500
    seen: set[str] = set()
    while True:
        infos = await store.list_sessions(offset=offset, limit=page)
        for info in infos:
            if info.session_id not in seen:
                seen.add(info.session_id)
                yield info
        if len(infos) < page:
            return
        offset += page


async def _write_records(store: SessionStore, session_ids: list[str], out: IO[str]) -> int:
    count = 0
    for session_id in session_ids:
        for record in await store.read_records(session_id):
            out.write(_dump(record.to_json()) + "\n")
            count += 1
    out.flush()
    return count


def _read_export(lines: Iterator[str], source: str) -> dict[str, list[SessionRecord]]:
    by_session: dict[str, list[SessionRecord]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise CommandError(f"{where} is not JSON: {exc}") from exc
        try:
            record = SessionRecord.from_json(data, where=where)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        by_session.setdefault(record.session_id, []).append(record)
    return by_session


def _load_export(path: str) -> dict[str, list[SessionRecord]]:
    if path == "-":
        return _read_export(iter(sys.stdin), "stdin")
    with open(path, encoding="utf-8") as source:
        return _read_export(iter(source), path)


async def _import(store: SessionStore, args: argparse.Namespace) -> None:
    # The whole file is read and checked before anything is written.
    by_session: dict[str, list[SessionRecord]] = args.records
    total = 0
    for session_id, records in by_session.items():
        if args.replace:
            session = store.session(session_id)
            try:
                await session.clear_session()
            finally:
                await _close(session)
        for start in range(0, len(records), _IMPORT_CHUNK):
            await store.write_records(session_id, records[start : start + _IMPORT_CHUNK])
        total += len(records)
    print(f"imported {total} items into {len(by_session)} sessions", file=sys.stderr)


async def _clear(store: SessionStore, args: argparse.Namespace) -> None:
    info = await _require(store, args.session_id)
    session = store.session(args.session_id)
    try:
        await session.clear_session()
    finally:
        await _close(session)
    print(f"cleared session {args.session_id!r} ({info.item_count} items)")


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
