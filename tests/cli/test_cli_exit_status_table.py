"""cli.md's exit-status table against the command: each row's cases exit as the row says.

The table is read from the page, so the page and the code cannot drift apart: a row whose status
changes fails here, and a new row fails until it has cases below.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from turnstore import SQLiteSession
from turnstore.cli import main

DOCS_CLI = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ROW = re.compile(r"^\| (?P<cause>.+?) \| (?P<effect>.+) \|$")


def exit_status_table() -> dict[str, int]:
    """Each row's cause, and the status its second cell states."""
    page = DOCS_CLI.read_text(encoding="utf-8")
    section = page.split("## Exit status and errors {#exit-status}", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, int] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match is None or match["cause"] in ("Cause", "---"):
            continue
        [status] = re.findall(r"\b[Ee]xit (\d+)\b", match["effect"])
        rows[match["cause"]] = int(status)
    return rows


class Cli:
    """Runs the command the way each row needs, in files of its own; records each outcome."""

    def __init__(self, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.dir = tmp_path
        self.request = request
        self.outcomes: list[tuple[list[str], int, str]] = []

    def run(self, *argv: str) -> None:
        capsys: pytest.CaptureFixture[str] = self.request.getfixturevalue("capsys")
        capsys.readouterr()
        try:
            status = main(list(argv))
        except SystemExit as exc:  # argparse's usage errors, as `python -m turnstore` ends
            status = exc.code if isinstance(exc.code, int) else -1
        self.outcomes.append((list(argv), status, capsys.readouterr().err))

    def run_without(self, module: str, *argv: str) -> None:
        """Run the command in a child process in which `module` cannot be imported."""
        code = (
            f"import sys\nsys.modules[{module!r}] = None\n"
            f"from turnstore.cli import main\nsys.exit(main({list(argv)!r}))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
        self.outcomes.append(([f"(no {module})", *argv], done.returncode, done.stderr))

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def sqlite_with_tables(self, name: str, sessions: dict[str, int]) -> str:
        """A SQLite file with the tables, holding `sessions` (an id and its item count)."""

        async def fill() -> None:
            async with SQLiteSession("made", self.path(name)) as session:
                await session.add_items([{"role": "user", "content": "x"}])
                await session.clear_session()
            for session_id, count in sessions.items():
                async with SQLiteSession(session_id, self.path(name)) as session:
                    await session.add_items([{"role": "user", "content": "x"}] * count)

        asyncio.run(fill())
        return self.path(name)

    def file(self, name: str, data: bytes) -> str:
        (self.dir / name).write_bytes(data)
        return self.path(name)

    def postgres(self, **parts: str) -> str:
        url = make_url(self.request.getfixturevalue("postgres_url")).set(**parts)
        return url.render_as_string(hide_password=False)


def _export_line(session_id: str) -> bytes:
    record = {"session_id": session_id, "item": {"role": "user", "content": "hi"}}
    return (json.dumps(record) + "\n").encode()


def no_db(cli: Cli) -> None:
    cli.request.getfixturevalue("monkeypatch").delenv("TURNSTORE_DB", raising=False)
    cli.run("list")


def mistyped_command(cli: Cli) -> None:
    db = cli.sqlite_with_tables("chats.db", {"a": 1})
    cli.run("--db", db, "lst")
    cli.run("--db", db, "LIST")
    cli.run("--db", db, "list", "--pgae", "2")


def bad_url(cli: Cli) -> None:
    cli.run("--db", "redis://localhost:6379/abc", "list")
    cli.run("--db", "redis://localhost:6379/0?socket_timeout=soon", "list")


def unknown_storage(cli: Cli) -> None:
    cli.run("--db", "mongodb://localhost/app", "list")


def sync_mysql(cli: Cli) -> None:
    cli.run("--db", "mysql://root@127.0.0.1/test", "list")


def missing_extra(cli: Cli) -> None:
    cli.run_without("redis", "--db", "redis://127.0.0.1:6379/0", "list")
    cli.run_without("sqlalchemy", "--db", "postgresql://postgres@127.0.0.1/app", "list")


def sqlite_directory(cli: Cli) -> None:
    export = cli.file("export.jsonl", _export_line("a"))
    (cli.dir / "folder").mkdir()
    for db in (cli.path("folder"), cli.path("no/such/dir/chats.db")):
        cli.run("--db", db, "list")
        cli.run("--db", db, "import", export)


def sqlite_file_missing(cli: Cli) -> None:
    db = cli.path("missing.db")
    for command in (["list"], ["show", "a"], ["export", "--all"], ["clear", "a"], ["stats"]):
        cli.run("--db", db, *command)
    cli.run("--db", db, "prune", "--idle", "30d")
    assert not Path(db).exists()


def unreachable(cli: Cli) -> None:
    cli.run("--db", "redis://127.0.0.1:1/0", "list")
    cli.run("--db", "postgresql://postgres:secret@127.0.0.1:1/test", "list")
    cli.run("--db", cli.postgres(database="turnstore_no_such_database"), "list")
    cli.run("--db", cli.postgres(username="turnstore_no_such_role"), "list")


def no_tables(cli: Cli) -> None:
    with sqlite3.connect(cli.path("other.db")) as other:
        other.execute("CREATE TABLE notes (body TEXT)")
    cli.run("--db", cli.path("other.db"), "list")
    db = cli.sqlite_with_tables("chats.db", {"a": 1})
    cli.run("--db", db, "--sessions-table", "agent_session", "list")
    cli.run("--db", cli.postgres(), "--sessions-table", "turnstore_no_such_table", "stats")


def missing_session(cli: Cli) -> None:
    db = cli.sqlite_with_tables("chats.db", {"a": 1})
    cli.run("--db", db, "show", "b")
    cli.run("--db", db, "export", "b")
    cli.run("--db", db, "show", "a\ud800")  # not UTF-8: no backend can store it
    cli.run(
        "--db",
        db,
        "import",
        cli.file("bad-id.jsonl", b'{"session_id":"a\\ud800","item":{"role":"user"}}\n'),
    )
    cli.run("--db", cli.postgres(), "import", cli.file("nul.jsonl", _export_line("a\x00b")))


def bad_import_file(cli: Cli) -> None:
    db = cli.path("new.db")
    cli.run("--db", db, "import", cli.path("no-such-export.jsonl"))
    cli.run("--db", db, "import", cli.file("empty.jsonl", b""))
    cli.run("--db", db, "import", cli.file("not-json.jsonl", b"not json\n"))
    cli.run("--db", db, "import", cli.file("latin-1.jsonl", b'{"session_id":"na\xefve"}\n'))
    assert not Path(db).exists()  # nothing is written


def empty_export(cli: Cli) -> None:
    db = cli.sqlite_with_tables("chats.db", {})
    backup = cli.file("backup.jsonl", _export_line("kept"))
    cli.run("--db", db, "export", "--all", "-o", backup)
    assert Path(backup).read_bytes() == _export_line("kept")


CASES: dict[str, Callable[[Cli], None]] = {
    "No `--db`, and no `TURNSTORE_DB`": no_db,
    "A mistyped command": mistyped_command,
    "A bad URL, such as `redis://localhost:6379/abc`": bad_url,
    "A URL of a kind turnstore does not know, such as `mongodb://`": unknown_storage,
    "`mysql://`, which names a synchronous driver": sync_mysql,
    "A PostgreSQL or Redis URL without its extra": missing_extra,
    "A SQLite path that is a directory, or whose directory does not exist": sqlite_directory,
    "A SQLite file that does not exist (any command but `import`)": sqlite_file_missing,
    "An unreachable server, or a wrong database, role or password": unreachable,
    "A SQL database without the tables (a wrong `--db`, a typo in `--sessions-table`)": no_tables,
    "A missing session, or a session id the backend cannot store": missing_session,
    "An import file that cannot be read, holds no record, or is not UTF-8 JSON": bad_import_file,
    "An export that finds nothing": empty_export,
}

TABLE = exit_status_table()


def test_every_row_of_the_table_has_cases_here() -> None:
    assert set(TABLE) == set(CASES)


@pytest.mark.parametrize(("cause", "status"), TABLE.items(), ids=list(TABLE))
def test_each_row_s_cases_exit_with_the_status_the_row_states(
    cause: str, status: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cli = Cli(tmp_path, request)
    CASES[cause](cli)
    assert cli.outcomes
    for argv, got, err in cli.outcomes:
        assert got == status, (argv, err)
        errors = [line for line in err.splitlines() if line.startswith("turnstore: error: ")]
        assert len(errors) == 1, (argv, err)  # one line says what went wrong
        assert errors[0].count("cannot be stored") <= 1, errors[0]  # and says it once
        assert "secret" not in err  # a URL is named without its password


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["prune", "--idle", "3x"], "prune"),
        (["prune"], "prune"),
        (["show"], "show"),
    ],
)
def test_a_commands_own_argument_errors_name_the_command(
    argv: list[str], command: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """cli.md: a command's missing or wrong argument prints `turnstore COMMAND: error:`."""
    cli = Cli(tmp_path, request)
    cli.run("--db", cli.sqlite_with_tables("chats.db", {}), *argv)
    [(_, status, err)] = cli.outcomes
    assert status == 2
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1, err
    assert errors[0].startswith(f"turnstore {command}: error: "), err


@pytest.mark.parametrize(
    ("argv", "with_db"),
    [
        (["lst"], True),  # a mistyped command
        (["list", "--pgae", "2"], True),  # a mistyped option
        (["show"], True),  # a missing argument
        (["prune", "--idle", "3x"], True),  # a wrong argument
        (["list"], False),  # a missing --db
    ],
)
def test_a_mistake_on_the_command_line_prints_the_usage_above_the_error_line(
    argv: list[str],
    with_db: bool,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cli.md: every failure ends with its error line; a command-line mistake prints the usage
    above it."""
    monkeypatch.delenv("TURNSTORE_DB", raising=False)
    cli = Cli(tmp_path, request)
    db = ["--db", cli.sqlite_with_tables("chats.db", {})] if with_db else []
    cli.run(*db, *argv)
    [(_, status, err)] = cli.outcomes
    assert status == 2
    lines = err.rstrip("\n").splitlines()
    assert lines[0].startswith("usage: turnstore"), err
    assert lines[-1].startswith("turnstore"), err
    assert ": error: " in lines[-1], err
