"""The `turnstore` command: list, show, export, import, clear, prune and count stored sessions.

Works on a SQLite file, a PostgreSQL (or other SQLAlchemy) URL or a Redis URL, given with `--db`
or the `TURNSTORE_DB` environment variable:

```bash
turnstore --db conversations.db list
turnstore --db postgresql://postgres@localhost/app show user-123 --limit 5
turnstore --db redis://localhost:6379/0 export --all -o backup.jsonl
turnstore --db postgresql://postgres@localhost/app import backup.jsonl
turnstore --db conversations.db list --prefix user-123/
turnstore --db redis://localhost:6379/0 prune --idle 30d
```

An export is JSON Lines, one item per line:
`{"session_id": "...", "created_at": "2026-11-29T10:00:00.123000+00:00", "item": {...}}`.
Importing it into any backend gives back the same sessions, items, order and `created_at`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import IO, Any

from . import __version__
from .exceptions import TurnstoreError
from .memory.codec import encode_items
from .memory.open_store import open_session_store
from .memory.store import SessionInfo, SessionRecord, SessionStore

__all__ = ["build_parser", "main"]

_ENV_TARGET = "TURNSTORE_DB"


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
        epilog=f"The storage can also be given in the {_ENV_TARGET} environment variable. "
        "The storage options may come before or after the command.",
    )
    parser.add_argument("--version", action="version", version=f"turnstore {__version__}")
    _add_storage_options(parser, defaults=True)
    # The same options after the command: SUPPRESS leaves the value given before it in place.
    storage = argparse.ArgumentParser(add_help=False)
    _add_storage_options(storage, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser(
        "list", parents=[storage], help="list sessions, most recently active first"
    )
    listing.add_argument("--page", type=_positive, default=1, help="page number (from 1)")
    listing.add_argument("--page-size", type=_positive, default=50, help="sessions per page")
    listing.add_argument("--prefix", default="", help="only sessions whose id starts with this")
    listing.add_argument("--json", action="store_true", help="print JSON Lines")

    show = commands.add_parser(
        "show", parents=[storage], help="print a session's items, one JSON object a line"
    )
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--limit", type=_non_negative, help="only the latest N items")

    export = commands.add_parser("export", parents=[storage], help="write sessions as JSON Lines")
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("session_ids", metavar="ID", nargs="*", default=[])
    which.add_argument("--all", action="store_true", help="every session")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")

    imports = commands.add_parser(
        "import",
        parents=[storage],
        help="write the sessions of a JSON Lines export (refuses sessions that hold items, "
        "unless --append or --replace)",
    )
    imports.add_argument("file", metavar="FILE", help="the export to read ('-' for stdin)")
    mode = imports.add_mutually_exclusive_group()
    mode.add_argument(
        "--append", action="store_true", help="add to sessions that already hold items"
    )
    mode.add_argument(
        "--replace",
        action="store_true",
        help="replace the items of each imported session (in the same transaction)",
    )

    clear = commands.add_parser("clear", parents=[storage], help="remove every item of a session")
    clear.add_argument("session_id", metavar="ID")

    prune = commands.add_parser(
        "prune",
        parents=[storage],
        help="delete the sessions with no activity for longer than a given time",
    )
    prune.add_argument(
        "--idle",
        metavar="AGE",
        type=_duration,
        required=True,
        help="idle time: a number with a unit, s, m, h or d (for example 30d, 12h)",
    )

    stats = commands.add_parser("stats", parents=[storage], help="count sessions and items")
    stats.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _add_storage_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    def default(value: str | None) -> str | None:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--db",
        metavar="TARGET",
        default=default(os.environ.get(_ENV_TARGET)),
        help="a SQLite file, a SQLAlchemy URL (postgresql://user@host/db) or a Redis URL "
        "(redis://host:6379/0)",
    )
    parser.add_argument(
        "--sessions-table", default=default("agent_sessions"), help="SQL sessions table"
    )
    parser.add_argument(
        "--messages-table", default=default("agent_messages"), help="SQL messages table"
    )
    parser.add_argument("--key-prefix", default=default("agent_sessions"), help="Redis key prefix")


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> timedelta:
    number, unit = text[:-1], text[-1:].lower()
    if unit not in _UNITS or not number.isdigit():
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (a whole number and a unit: 90s, 30m, 12h, 30d)"
        )
    try:
        return timedelta(seconds=int(number) * _UNITS[unit])
    except OverflowError:
        raise argparse.ArgumentTypeError(f"duration too large: {text!r}") from None


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
        The exit status: 0 on success (also when the reader of the output stops early, as
        `head` does), 1 when the command failed (a missing session, a storage error), 2 for a
        usage error (a bad option or storage target).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.db:
        parser.error(f"no storage given: pass --db TARGET or set {_ENV_TARGET}")
    try:
        return _main(args)
    except BrokenPipeError:
        # The reader went away (`turnstore list --json | head -1`): what it wanted was written.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


def _main(args: argparse.Namespace) -> int:
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
    except (ValueError, TypeError, OSError, ImportError) as exc:
        print(f"turnstore: error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_run(store, args))
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # main() treats a reader that went away as success
    except CommandError as exc:
        print(f"turnstore: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Any other failure is an error of this storage, never an empty result: name it (the
        # target shows no password).
        text = str(exc) or type(exc).__name__
        if store.target not in text:
            text = f"{store.target}: {text}"
        print(f"turnstore: error: {text}", file=sys.stderr)
        return 1
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
            "prune": _prune,
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
    header = "SESSION ID"
    width = max(_display_width(header), *(_display_width(info.session_id) for info in infos))
    print(f"{_pad(header, width)}  {'ITEMS':>7}  LAST ACTIVITY (UTC)")
    for info in infos:
        print(f"{_pad(info.session_id, width)}  {info.item_count:>7}  {_time(info.last_activity)}")
    first = offset + 1
    footer = f"page {args.page}: sessions {first}-{offset + len(infos)}"
    if more:
        footer += f"; next page: --page {args.page + 1}"
    print(footer)


def _display_width(text: str) -> int:
    """Columns `text` takes in a terminal.

    Wide and fullwidth characters (CJK) take two columns, combining marks and control
    characters none, everything else one.
    """
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Cc", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def _pad(text: str, width: int) -> str:
    """`text` left-aligned in `width` terminal columns."""
    return text + " " * max(0, width - _display_width(text))


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
        count = await _export_to_file(store, session_ids, args.output)
        print(
            f"exported {count} items of {len(session_ids)} sessions to {args.output}",
            file=sys.stderr,
        )
    else:
        await _write_records(store, session_ids, sys.stdout)


async def _export_to_file(store: SessionStore, session_ids: list[str], path: str) -> int:
    # Written to a temporary file beside the target and renamed over it only once complete: an
    # error never leaves an empty or partial backup (and never clobbers an older one).
    directory = os.path.dirname(await asyncio.to_thread(os.path.abspath, path))
    fd, temp = await asyncio.to_thread(
        tempfile.mkstemp, prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            count = await _write_records(store, session_ids, out)
            await asyncio.to_thread(os.fsync, out.fileno())
        await asyncio.to_thread(os.replace, temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return count


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
        except ValueError as exc:
            raise CommandError(f"{where} is not JSON: {exc}") from exc
        try:
            record = SessionRecord.from_json(data, where=where)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        by_session.setdefault(record.session_id, []).append((where, record))
    return by_session


def _load_export(path: str) -> _Entries:
    if path == "-":
        return _read_export(sys.stdin.buffer, "stdin")
    with open(path, "rb") as source:
        return _read_export(source, path)


async def _import(store: SessionStore, args: argparse.Namespace) -> None:
    by_session: _Entries = args.records
    # 1. Everything is known storable before the first write: each session id (by the same
    #    checks the backend's session applies) and each item (by the codec every write uses).
    for session_id, entries in by_session.items():
        where = entries[0][0]
        try:
            await _close(store.session(session_id))
        except (TypeError, ValueError) as exc:
            raise CommandError(
                f"{where}: session id {session_id!r} cannot be stored: {exc}"
            ) from exc
        for line, record in entries:
            try:
                encode_items([record.item])
            except TypeError as exc:
                reason = str(exc).removeprefix("item 0 ")
                raise CommandError(f"{line}: the item cannot be stored: it {reason}") from exc
    # 2. A plain import never mixes a file into sessions that already hold items.
    occupied = []
    for session_id in by_session:
        info = await store.get_info(session_id)
        if info is not None and info.item_count:
            occupied.append(f"{session_id!r} ({info.item_count} items)")
    if occupied and not (args.append or args.replace):
        raise CommandError(
            f"nothing imported: {len(occupied)} of the file's sessions already hold items in "
            f"{store.target}: {', '.join(occupied)}. Pass --append to add to them, or "
            "--replace to replace their items"
        )
    # 3. One transaction per session (one script on Redis): a session is written whole or not.
    done: list[str] = []
    total = 0
    for session_id, entries in by_session.items():
        records = [record for _, record in entries]
        try:
            await store.write_records(session_id, records, replace=args.replace)
        except (TurnstoreError, TypeError, ValueError, OSError) as exc:
            written = (
                f"{len(done)} sessions were imported before it ({', '.join(map(repr, done))}); "
                "rerun with --replace to import the file again without duplicates"
                if done
                else "nothing was imported"
            )
            raise CommandError(
                f"importing session {session_id!r} failed, nothing of it was written: {exc}. "
                f"{written}"
            ) from exc
        done.append(session_id)
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


async def _prune(store: SessionStore, args: argparse.Namespace) -> None:
    deleted = await store.delete_idle_sessions(args.idle)
    seconds = int(args.idle.total_seconds())
    unit = next(u for u in "dhms" if seconds % _UNITS[u] == 0)
    age = f"{seconds // _UNITS[unit]}{unit}"
    print(f"deleted {deleted} session{'' if deleted == 1 else 's'} idle for more than {age}")


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
