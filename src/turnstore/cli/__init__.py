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
The first line of each session also carries the session's times,
`"session": {"created_at": "...", "last_activity": "..."}`. Importing it into any backend gives
back the same sessions, items, order and times, so `list` keeps its order and `prune --idle`
sees the same idle sessions (a file without `session` imports as a write made now).
In a SQLite file of `AdvancedSQLiteSession`, `show` and `list` count and show `main` (or
`show --branch NAME`); `export` writes `main`, then each other branch whose records carry
`"branch": "NAME"`, and `import` into a SQLite file puts them back on their branch.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import re
import sys
import threading
from collections.abc import Sequence
from datetime import timedelta
from typing import NoReturn

from .. import __version__
from ..memory.open_store import open_session_store
from ..memory.sqlalchemy.timeouts import DEFAULT_COMMAND_TIMEOUT
from ..memory.store import SessionStore
from .commands import UNITS, CommandError, load_export, run
from .interrupts import Interrupts

__all__ = ["build_parser", "main"]

_ENV_TARGET = "TURNSTORE_DB"


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the `turnstore` command.

    Returns:
        The parser, with one sub-command per action.
    """
    parser = _Parser(
        prog="turnstore",
        description="Inspect and move the sessions stored in SQLite, PostgreSQL or Redis.",
        epilog=f"The storage can also be given in the {_ENV_TARGET} environment variable. "
        "The storage options may come before or after the command.",
    )
    parser.add_argument("--version", action="version", version=f"turnstore {__version__}")
    _add_storage_options(parser, defaults=True)
    # The same options after the command: SUPPRESS leaves the value given before it in place.
    storage = _Parser(add_help=False)
    _add_storage_options(storage, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[storage], help=summary, description=description)

    listing = command(
        "list",
        "list sessions, most recently active first",
        "List the stored sessions, the most recently active first, with their "
        "item counts and last activity, a page at a time.",
    )
    listing.add_argument("--page", type=_positive, default=1, help="page number (from 1)")
    listing.add_argument("--page-size", type=_positive, default=50, help="sessions per page")
    listing.add_argument("--prefix", default="", help="only sessions whose id starts with this")
    listing.add_argument("--json", action="store_true", help="print JSON Lines")

    show = command(
        "show",
        "print a session's items, one JSON object a line",
        "Print the items of one session, oldest first, one JSON object a line.",
    )
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--limit", type=_non_negative, help="only the latest N items")
    show.add_argument(
        "--branch",
        metavar="NAME",
        help="the AdvancedSQLiteSession branch to show (default: main)",
    )

    export = command(
        "export",
        "write sessions as JSON Lines",
        "Write sessions as JSON Lines, one item a line with its session and time. "
        "With -o the file is replaced only once the export is complete. An export that finds "
        "nothing fails and leaves the file as it was, unless --allow-empty.",
    )
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("session_ids", metavar="ID", nargs="*", default=[])
    which.add_argument("--all", action="store_true", help="every session")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    export.add_argument(
        "--allow-empty",
        action="store_true",
        help="succeed when there is nothing to export (with -o, write an empty file)",
    )
    export.add_argument(
        "--branch",
        metavar="NAME",
        help="only this AdvancedSQLiteSession branch (default: main and every other branch, "
        "each record of another branch carrying its name)",
    )

    imports = command(
        "import",
        "write the sessions of a JSON Lines export (refuses sessions that hold items, "
        "unless --append or --replace)",
        "Write the sessions of a JSON Lines export into the storage, one "
        "transaction per session, creating the tables if needed. Every line is checked before "
        "the first write. Sessions that already hold items are refused unless --append or "
        "--replace.",
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

    clear = command(
        "clear",
        "delete a session and every item it holds",
        "Delete one session and every item it holds, in one transaction: it no longer "
        "appears in list or stats.",
    )
    clear.add_argument("session_id", metavar="ID")

    prune = command(
        "prune",
        "delete every session (with all its items) idle for longer than --idle",
        "Delete every session, with all its items, whose last write is older "
        "than --idle. --dry-run lists those sessions and deletes nothing.",
    )
    prune.add_argument(
        "--idle",
        metavar="AGE",
        type=_duration,
        required=True,
        help="idle time: a number with a unit, s, m, h or d (for example 30d, 12h)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list the sessions it would delete; delete nothing"
    )

    stats = command(
        "stats",
        "count sessions and items",
        "Count the sessions and items of the storage and show its last activity.",
    )
    stats.add_argument("--json", action="store_true", help="print JSON")
    return parser


class _Parser(argparse.ArgumentParser):
    """An argument parser that suggests the command meant by a mistyped one."""

    def error(self, message: str) -> NoReturn:
        """Print the usage and `message` (with a "did you mean" for a command typo); exit 2."""
        bad = re.match(r"argument COMMAND: invalid choice: '(.*?)'", message)
        if bad is not None:
            typed, names = bad.group(1), [*self._subcommands()]
            word = typed.lower()
            # The commands it begins (`st`: stats), else the ones it is close to; every one
            # that fits (`s`: show or stats).
            close = [name for name in names if word and name.startswith(word)]
            close = close or difflib.get_close_matches(word, names, n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            message = f"unknown command {typed!r}{hint} (commands: {', '.join(names)})"
        super().error(message)

    def _subcommands(self) -> list[str]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return list(action.choices)
        return []


def _add_storage_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    def default(value: object) -> object:
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
    parser.add_argument(
        "--command-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=default(DEFAULT_COMMAND_TIMEOUT),
        help="SQL: the most seconds one database call may take before the command fails "
        f"(default {DEFAULT_COMMAND_TIMEOUT:g})",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _duration(text: str) -> timedelta:
    number, unit = text[:-1], text[-1:].lower()
    if unit not in UNITS or not number.isdigit():
        raise argparse.ArgumentTypeError(
            f"not a duration: {text!r} (a whole number and a unit: 90s, 30m, 12h, 30d)"
        )
    try:
        return timedelta(seconds=int(number) * UNITS[unit])
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
        usage error (a bad option or storage target), 130 when interrupted by Ctrl-C (SIGINT)
        and 143 by SIGTERM. Run as the program (no `argv`, in the main thread), it handles
        those signals itself (an interrupt prints one line saying what was done) and ends the
        process instead of returning.
    """
    interrupts = Interrupts()
    program = argv is None and threading.current_thread() is threading.main_thread()
    if program:
        interrupts.install()
    try:
        status = _parse_and_run(argv, interrupts)
    except SystemExit as exc:  # argparse: --help, --version, a usage error
        if not program or not (exc.code is None or isinstance(exc.code, int)):
            raise
        status = exc.code or 0
    if program:
        interrupts.exit(status)
    return status


def _parse_and_run(argv: Sequence[str] | None, interrupts: Interrupts) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.db:
        parser.error(f"no storage given: pass --db TARGET or set {_ENV_TARGET}")
    args.interrupts = interrupts
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
    interrupts: Interrupts = args.interrupts
    if args.command == "import":
        interrupts.describe = lambda: "nothing was imported"
        try:
            args.records = load_export(args.file)
        except CommandError as exc:
            return _error(exc, 1)
    try:
        store = open_session_store(
            args.db,
            sessions_table=args.sessions_table,
            messages_table=args.messages_table,
            key_prefix=args.key_prefix,
            create=args.command == "import",
            command_timeout=args.command_timeout,
        )
    except (ValueError, TypeError, OSError, ImportError) as exc:
        return _error(exc, 2)
    try:
        asyncio.run(_run(store, args, interrupts))
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # main() treats a reader that went away as success
    except (KeyboardInterrupt, asyncio.CancelledError):
        return interrupts.report() if interrupts.signum else 130
    except Exception as exc:
        if interrupts.signum:  # a failure that the interrupt caused
            return interrupts.report()
        if isinstance(exc, CommandError):
            return _error(exc, 1)
        # Any other failure is an error of this storage, never an empty result: name it (the
        # target shows no password).
        text = str(exc) or type(exc).__name__
        if store.target not in text:
            text = f"{store.target}: {text}"
        return _error(text, 1)
    return 0


async def _run(store: SessionStore, args: argparse.Namespace, interrupts: Interrupts) -> None:
    """Carry out the command as a task of its own, which an interrupt cancels; close `store`."""
    work = asyncio.ensure_future(run(store, args))
    try:
        with interrupts.cancelling(work):
            await work
    finally:
        await store.aclose()


def _error(message: object, status: int) -> int:
    """Print `message` as the command's error; return the exit status."""
    print(f"turnstore: error: {message}", file=sys.stderr)
    return status
