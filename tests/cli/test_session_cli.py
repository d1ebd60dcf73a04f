"""The `turnstore` command line on a SQLite file, PostgreSQL (directly and through PgBouncer in
transaction mode), Redis and a Redis Cluster."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.backends import delete_prefix, drop_tables, unique_prefix
from turnstore import SQLiteSession
from turnstore.cli import main
from turnstore.extensions.memory import RedisSession, SQLAlchemySession

ITEMS = {
    "alpha": [
        {"role": "user", "content": "héllo 😀 — 你好"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": [1, 2]}'},
        {"type": "function_call_output", "call_id": "c1", "output": 'line1\nline2\t"q"'},
    ],
    "beta": [{"role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
    "o'hara; DROP TABLE x": [{"role": "user", "content": "hostile id"}],
}


@dataclass
class Backend:
    """One storage for the CLI: its --db arguments and how to write sessions into it."""

    name: str
    args: list[str]
    target: str
    tables: tuple[str, str] = ("agent_sessions", "agent_messages")
    prefix: str = "agent_sessions"

    def session(self, session_id: str) -> object:
        if self.name == "sqlite":
            return SQLiteSession(session_id, self.target)
        if self.name in ("postgres", "pgbouncer"):
            return SQLAlchemySession.from_url(
                session_id,
                self.target,
                create_tables=True,
                sessions_table=self.tables[0],
                messages_table=self.tables[1],
            )
        return RedisSession.from_url(session_id, self.target, key_prefix=self.prefix)

    def fill(self, items: dict[str, list[dict[str, object]]]) -> None:
        async def run() -> None:
            for session_id, batch in items.items():
                session = self.session(session_id)
                try:
                    await session.add_items(batch)  # type: ignore[attr-defined]
                finally:
                    await session.aclose()  # type: ignore[attr-defined]

        asyncio.run(run())

    def items(self, session_id: str) -> list[object]:
        async def run() -> list[object]:
            session = self.session(session_id)
            try:
                return list(await session.get_items())  # type: ignore[attr-defined]
            finally:
                await session.aclose()  # type: ignore[attr-defined]

        return asyncio.run(run())


def _sqlite(tmp_path: Path) -> Backend:
    path = str(tmp_path / f"{uuid.uuid4().hex[:6]}.db")
    return Backend("sqlite", ["--db", path], path)


def _postgres(url: str, name: str = "postgres") -> Iterator[Backend]:
    tag = uuid.uuid4().hex[:10]
    tables = (f"cli{tag}_s", f"cli{tag}_m")
    yield Backend(
        name,
        ["--db", url, "--sessions-table", tables[0], "--messages-table", tables[1]],
        url,
        tables=tables,
    )

    async def drop() -> None:
        from turnstore.memory.sqlalchemy.session import create_engine_for_url

        engine = create_engine_for_url(url)
        await drop_tables(engine, tables)
        await engine.dispose()

    asyncio.run(drop())


def _redis(url: str, name: str = "redis") -> Iterator[Backend]:
    prefix = unique_prefix("clitest")
    yield Backend(name, ["--db", url, "--key-prefix", prefix], url, prefix=prefix)

    async def drop() -> None:
        from turnstore.memory.redis.session import create_client_for_url

        client = create_client_for_url(url)
        await delete_prefix(client, prefix)
        await client.aclose()

    asyncio.run(drop())


def _make(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if kind == "sqlite":
        yield _sqlite(tmp_path)
    elif kind == "postgres":
        yield from _postgres(request.getfixturevalue("postgres_url"))
    elif kind == "pgbouncer":  # the --db URL carries ?pgbouncer=true
        yield from _postgres(request.getfixturevalue("pgbouncer_url"), "pgbouncer")
    elif kind == "redis":
        yield from _redis(request.getfixturevalue("redis_url"))
    else:  # a redis+cluster:// URL
        yield from _redis(request.getfixturevalue("redis_cluster_url"), "redis-cluster")


BACKENDS = ["sqlite", "postgres", "pgbouncer", "redis", "redis-cluster"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _make(request.param, request, tmp_path)


@pytest.fixture(params=BACKENDS)
def other(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    yield from _make(request.param, request, tmp_path)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_show_stats_clear(backend: Backend, capsys: pytest.CaptureFixture[str]) -> None:
    backend.fill(ITEMS)
    code, out, _ = run_cli(capsys, *backend.args, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ITEMS", "LAST", "ACTIVITY", "(UTC)", "SESSION", "ID"]
    assert len(lines) == 5
    start = lines[0].index("SESSION ID")
    for session_id, items in ITEMS.items():
        row = next(line for line in lines[1:4] if line[start:] == session_id)
        assert row.split()[0] == str(len(items))
    assert "page 1: sessions 1-3" in lines[-1]

    code, out, _ = run_cli(capsys, *backend.args, "list", "--json")
    listed = {row["session_id"]: row["items"] for row in map(json.loads, out.splitlines())}
    assert listed == {sid: len(items) for sid, items in ITEMS.items()}

    code, out, _ = run_cli(capsys, *backend.args, "show", "alpha")
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == ITEMS["alpha"]
    code, out, _ = run_cli(capsys, *backend.args, "show", "alpha", "--limit", "1")
    assert [json.loads(line) for line in out.splitlines()] == ITEMS["alpha"][-1:]

    code, out, _ = run_cli(capsys, *backend.args, "stats", "--json")
    stats = json.loads(out)
    assert (stats["sessions"], stats["items"]) == (3, 5)
    assert stats["last_activity"] is not None
    code, out, _ = run_cli(capsys, *backend.args, "stats")
    assert "sessions:      3" in out
    assert "items:         5" in out

    code, out, _ = run_cli(capsys, *backend.args, "clear", "o'hara; DROP TABLE x")
    assert code == 0
    assert "cleared session" in out
    assert out.endswith("(1 item)\n")
    assert backend.items("o'hara; DROP TABLE x") == []
    assert backend.items("alpha") == ITEMS["alpha"]


def test_missing_session_is_a_clear_error(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill({"alpha": ITEMS["alpha"]})
    for command in (["show", "nope"], ["clear", "nope"], ["export", "nope"]):
        code, out, err = run_cli(capsys, *backend.args, *command)
        assert code == 1
        assert out == ""
        assert "error: no session 'nope'" in err


def test_pagination(backend: Backend, capsys: pytest.CaptureFixture[str]) -> None:
    backend.fill({f"s{i}": [{"n": i}] for i in range(5)})
    seen: list[str] = []
    for page in (1, 2, 3):
        code, out, _ = run_cli(
            capsys, *backend.args, "list", "--page", str(page), "--page-size", "2", "--json"
        )
        assert code == 0
        seen += [json.loads(line)["session_id"] for line in out.splitlines()]
    assert sorted(seen) == [f"s{i}" for i in range(5)]
    code, out, _ = run_cli(capsys, *backend.args, "list", "--page-size", "2")
    assert "next page: --page 2" in out
    code, out, _ = run_cli(capsys, *backend.args, "list", "--page", "9")
    assert "no sessions on page 9" in out


def test_export_import_round_trips_between_backends(
    backend: Backend, other: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill(ITEMS)
    first = tmp_path / "first.jsonl"
    code, _, err = run_cli(capsys, *backend.args, "export", "--all", "-o", str(first))
    assert code == 0, err
    assert "exported 5 items of 3 sessions" in err

    code, _, err = run_cli(capsys, *other.args, "import", str(first))
    assert code == 0, err
    assert "imported 5 items into 3 sessions" in err
    for session_id, items in ITEMS.items():
        assert other.items(session_id) == items

    code, second, _ = run_cli(capsys, *other.args, "export", "--all")
    assert code == 0

    def by_session(text: str) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for line in text.splitlines():
            record = json.loads(line)
            if other.name.startswith("redis") and "session" in record:
                # Redis keeps no creation time of its own: a session's is its first item's.
                del record["session"]["created_at"]
                line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
            grouped.setdefault(record["session_id"], []).append(line)
        return grouped

    # Same sessions, same items in the same order, same times: byte for byte.
    assert by_session(second) == by_session(first.read_text(encoding="utf-8"))


def test_import_replace_and_bad_files(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill({"alpha": [{"old": True}]})
    export = tmp_path / "e.jsonl"
    export.write_text(
        json.dumps({"session_id": "alpha", "created_at": None, "item": {"new": 1}}) + "\n",
        encoding="utf-8",
    )
    code, _, err = run_cli(capsys, *backend.args, "import", str(export))
    assert code == 1
    assert "'alpha' (1 item)" in err
    assert "--append" in err
    assert "--replace" in err
    assert backend.items("alpha") == [{"old": True}]  # a plain import wrote nothing
    code, _, err = run_cli(capsys, *backend.args, "import", "--append", str(export))
    assert code == 0, err
    assert backend.items("alpha") == [{"old": True}, {"new": 1}]
    code, _, err = run_cli(capsys, *backend.args, "import", "--replace", str(export))
    assert code == 0, err
    assert backend.items("alpha") == [{"new": 1}]

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"session_id": "gamma", "item": {"a": 1}}) + "\n{not json\n", encoding="utf-8"
    )
    code, _, err = run_cli(capsys, *backend.args, "import", str(bad))
    assert code == 1
    assert "line 2, column 2 is not JSON" in err
    assert backend.items("gamma") == []  # nothing written: the file is checked first
    bad.write_text(json.dumps({"session_id": "gamma", "item": [1]}) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, *backend.args, "import", str(bad))
    assert code == 1
    assert "'item' must be a JSON object" in err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("ftp://example", "cannot use 'ftp://example'"),
        ("sqlite://nope", "a SQLite URL looks like sqlite:///"),
        ("/nonexistent/dir/file.db", "the directory '/nonexistent/dir' of the SQLite database"),
        ("postgresql://postgres@127.0.0.1:1/test", "turnstore: error:"),
        ("redis://127.0.0.1:1/0", "turnstore: error:"),
    ],
)
def test_bad_targets_are_clear_errors(
    target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--db", target, "list")
    assert code in (1, 2)
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_no_target_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TURNSTORE_DB", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["list"])
    assert info.value.code == 2
    assert "pass --db TARGET or set TURNSTORE_DB" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("turnstore")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "turnstore.cli"]
    backend = _sqlite(tmp_path)
    backend.fill({"alpha": ITEMS["alpha"]})
    env = {**os.environ, "TURNSTORE_DB": backend.target}
    done = subprocess.run(
        [*command, "show", "alpha"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == ITEMS["alpha"]
    helped = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False)
    for name in ("list", "show", "export", "import", "clear", "stats"):
        assert name in helped.stdout


def test_every_command_and_option_is_documented() -> None:
    import argparse

    from turnstore.cli import build_parser

    docs = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        assert f"| `{name}" in docs, f"command {name!r} is missing from docs/cli.md"
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in docs, f"{name} {option} is missing from docs/cli.md"
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and option != "--help":
                assert option in docs, f"{option} is missing from docs/cli.md"


# --- import: everything checked before the first write; one transaction per session -------------


def _write_export(path: Path, records: list[dict[str, object]], raw_tail: str = "") -> None:
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    path.write_text("\n".join(lines) + "\n" + raw_tail, encoding="utf-8", errors="surrogatepass")


def _records(session_id: str, count: int) -> list[dict[str, object]]:
    return [{"session_id": session_id, "created_at": None, "item": {"n": i}} for i in range(count)]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ('{"session_id": "b", "item": {"x": NaN}}', "Out of range float values"),
        ('{"session_id": "b", "item": {"x": Infinity}}', "Out of range float values"),
        ('{"session_id": "b", "item": {"x": "\\ud800"}}', "surrogate"),
        ('{"session_id": "\\udc00", "item": {"x": 1}}', "cannot be stored"),
    ],
    ids=["nan", "infinity", "surrogate-item", "surrogate-id"],
)
def test_import_writes_nothing_when_any_record_cannot_be_stored(
    backend: Backend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bad_line: str,
    reason: str,
) -> None:
    backend.fill({"b": [{"old": True}]})
    export = tmp_path / "e.jsonl"
    # 1,200 good records of session a, 1,100 of b, then the bad one (after the first 1,000 of b).
    _write_export(export, _records("a", 1200) + _records("b", 1100), bad_line + "\n")
    for mode in ([], ["--append"], ["--replace"]):
        code, _, err = run_cli(capsys, *backend.args, "import", *mode, str(export))
        assert code == 1
        assert f"{export} line 2301" in err
        assert reason in err
        assert backend.items("a") == []
        assert backend.items("b") == [{"old": True}]  # --replace cleared nothing


def test_import_of_a_too_long_id_on_postgres_names_the_line(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for pg in _postgres(postgres_url):
        export = tmp_path / "e.jsonl"
        _write_export(export, _records("a", 3) + _records("x" * 300, 1))
        code, _, err = run_cli(capsys, *pg.args, "import", str(export))
        assert code == 1
        assert f"{export} line 4" in err
        assert "at most 255 characters" in err
        assert pg.items("a") == []


def test_importing_a_file_twice_refuses_and_names_the_sessions(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "e.jsonl"
    _write_export(export, _records("a", 2) + _records("b", 1) + _records("c", 1))
    backend.fill({"c": [{"old": True}]})
    code, _, err = run_cli(capsys, *backend.args, "import", str(export))
    assert code == 1
    assert "'c' (1 item)" in err
    assert backend.items("a") == []
    assert backend.items("b") == []
    code, _, err = run_cli(capsys, *backend.args, "import", "--replace", str(export))
    assert code == 0, err
    code, _, err = run_cli(capsys, *backend.args, "import", str(export))
    assert code == 1
    assert "'a' (2 items)" in err
    assert "'b' (1 item)" in err
    assert "'c' (1 item)" in err
    assert backend.items("a") == [{"n": 0}, {"n": 1}]  # not doubled
    code, _, err = run_cli(capsys, *backend.args, "import", "--replace", str(export))
    assert code == 0, err
    assert backend.items("a") == [{"n": 0}, {"n": 1}]  # --replace is idempotent
    with pytest.raises(SystemExit) as info:  # a usage error: the two modes exclude each other
        main([*backend.args, "import", "--append", "--replace", str(export)])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def _poison_sql(backend: Backend) -> None:
    """Make the database refuse (at write time) any item that holds the word "poison"."""
    if backend.name == "sqlite":
        import sqlite3

        conn = sqlite3.connect(backend.target)
        with conn:
            conn.execute(
                f'CREATE TRIGGER poison BEFORE INSERT ON "{backend.tables[1]}" '
                "WHEN NEW.message_data LIKE '%poison%' "
                "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"
            )
        conn.close()
        return

    async def run() -> None:
        from sqlalchemy import text

        from turnstore.memory.sqlalchemy.session import create_engine_for_url

        engine = create_engine_for_url(backend.target)  # the session's own URL rules (pgbouncer=)
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    f"CREATE OR REPLACE FUNCTION {backend.tables[1]}_poison() RETURNS trigger AS "
                    "$$ BEGIN IF NEW.message_data LIKE '%poison%' THEN "
                    "RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
                )
            )
            await conn.execute(
                text(
                    f'CREATE TRIGGER poison BEFORE INSERT ON "{backend.tables[1]}" '
                    f"FOR EACH ROW EXECUTE FUNCTION {backend.tables[1]}_poison()"
                )
            )
        await engine.dispose()

    asyncio.run(run())


def _poison_redis(backend: Backend, session_id: str) -> None:
    """Make session_id's key a string, so that Redis refuses to append to it."""

    async def run() -> None:
        from turnstore.memory.redis.keys import layout_for
        from turnstore.memory.redis.session import create_client_for_url

        client = create_client_for_url(backend.target)  # one Redis or a cluster, as the URL says
        key = layout_for(client, backend.prefix).items_key(session_id)
        await client.set(key, "not a list")
        await client.aclose()

    asyncio.run(run())


def test_a_session_that_fails_at_write_time_is_written_whole_or_not_at_all(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill({"a": [{"old": True}], "b": [{"old": True}]})
    export = tmp_path / "e.jsonl"
    poisoned = _records("b", 2500)
    poisoned[1500]["item"] = {"text": "poison"}  # after the first 1,000 rows of the session
    _write_export(export, _records("a", 3) + poisoned)
    if backend.name.startswith("redis"):
        _poison_redis(backend, "b")
    else:
        _poison_sql(backend)
    code, _, err = run_cli(capsys, *backend.args, "import", "--replace", str(export))
    assert code == 1
    if backend.name.startswith("redis"):
        # Redis: the key of the wrong type is found before the first write.
        assert "WRONGTYPE" in err
        assert backend.target in err
        assert backend.items("a") == [{"old": True}]
        return
    assert "importing session 'b' failed, nothing of it was written" in err
    assert "1 of 2 sessions was imported, each whole ('a')" in err
    assert "Run the same import with --replace to finish it" in err
    assert backend.items("a") == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert backend.items("b") == [{"old": True}]  # the replacement was rolled back whole


# --- errors are never an empty result; backups are never empty or partial -----------------------


def test_a_wrong_postgres_database_or_role_is_an_error_not_an_empty_store(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy.engine import make_url

    base = make_url(postgres_url)
    wrong = [
        base.set(database=f"nodb_{uuid.uuid4().hex[:8]}", password="s3cret"),
        base.set(username=f"norole_{uuid.uuid4().hex[:8]}", password="s3cret"),
    ]
    backup = tmp_path / "backup.jsonl"
    backup.write_text("an older backup\n", encoding="utf-8")
    for url in wrong:
        target = url.render_as_string(hide_password=False)
        shown = url.render_as_string(hide_password=True)
        for command in (["stats"], ["list"], ["export", "--all", "-o", str(backup)]):
            code, out, err = run_cli(capsys, "--db", target, *command)
            assert code == 1, (command, out, err)
            assert shown in err
            assert "s3cret" not in err + out
            assert "Traceback" not in err
        assert backup.read_text(encoding="utf-8") == "an older backup\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl"]


def _closed_port() -> int:
    """A local port nothing listens on (bound, read and released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _unreachable(kind: str, request: pytest.FixtureRequest) -> tuple[str, str]:
    """A URL of `kind` that cannot be used, and the same URL as the CLI must show it."""
    from sqlalchemy.engine import make_url

    port = _closed_port()
    if kind == "postgres-wrong-port":
        url = make_url(request.getfixturevalue("postgres_url")).set(port=port, password="s3cret")
    elif kind == "mariadb-wrong-port":
        url = make_url(request.getfixturevalue("mysql_url")).set(port=port, password="s3cret")
    elif kind == "mariadb-wrong-database":  # no password: the server gets as far as the name
        url = make_url(request.getfixturevalue("mysql_url")).set(
            database=f"nodb_{uuid.uuid4().hex[:8]}"
        )
    elif kind == "mariadb-wrong-user":
        url = make_url(request.getfixturevalue("mysql_url")).set(
            username=f"nouser_{uuid.uuid4().hex[:6]}", password="s3cret"
        )
    elif kind == "redis-wrong-port":
        request.getfixturevalue("redis_url")
        return f"redis://:s3cret@127.0.0.1:{port}/0", f"redis://:***@127.0.0.1:{port}/0"
    else:  # redis-cluster-wrong-port
        request.getfixturevalue("redis_cluster_url")
        return (
            f"redis+cluster://:s3cret@127.0.0.1:{port}",
            f"redis+cluster://:***@127.0.0.1:{port}",
        )
    return url.render_as_string(hide_password=False), url.render_as_string(hide_password=True)


@pytest.mark.parametrize(
    "kind",
    [
        "postgres-wrong-port",
        "mariadb-wrong-port",
        "mariadb-wrong-database",
        "mariadb-wrong-user",
        "redis-wrong-port",
        "redis-cluster-wrong-port",
    ],
)
def test_an_unusable_store_is_an_error_naming_the_url_without_its_password(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target, shown = _unreachable(kind, request)
    backup = tmp_path / "backup.jsonl"
    backup.write_text("an older backup\n", encoding="utf-8")
    fresh = tmp_path / "fresh.jsonl"
    for command in (
        ["stats"],
        ["list"],
        ["export", "--all", "-o", str(backup)],
        ["export", "--all", "-o", str(fresh)],
    ):
        code, out, err = run_cli(capsys, "--db", target, *command)
        assert code == 1, (command, out, err)
        assert shown in err
        assert "s3cret" not in err + out
        assert "Traceback" not in err
    assert backup.read_text(encoding="utf-8") == "an older backup\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl"]  # no fresh, no temp


def test_an_export_file_that_cannot_be_written_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite = _sqlite(tmp_path)
    sqlite.fill({"a": [{"n": 1}]})
    for output in (tmp_path / "no-such-dir" / "backup.jsonl", tmp_path / "a-dir"):
        if output.name == "a-dir":
            output.mkdir()
        code, _, err = run_cli(capsys, *sqlite.args, "export", "--all", "-o", str(output))
        assert code == 1
        # The file is at fault, not the store: the message names the file the user gave.
        assert f"cannot write {output}" in err
        assert ".tmp" not in err
    # No temp file left behind, nor SQLite's -wal and -shm (every connection was closed).
    assert {p.name for p in tmp_path.iterdir()} == {"a-dir", Path(sqlite.target).name}


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["stats"],
        ["export", "--all"],
        ["show", "a"],
        ["clear", "a"],
        ["prune", "--idle", "1d"],
    ],
)
def test_missing_tables_are_an_error_naming_them(
    command: list[str],
    postgres_url: str,
    mysql_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sqlite3

    other = tmp_path / "other-app.db"  # a SQLite file of another application
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    tag = uuid.uuid4().hex[:8]
    named = ["--sessions-table", f"none{tag}_s", "--messages-table", f"none{tag}_m"]
    for args, missing in (
        (["--db", str(other)], "'agent_sessions' and 'agent_messages'"),
        (["--db", str(other), *named], f"'none{tag}_s' and 'none{tag}_m'"),
        (["--db", postgres_url, *named], f"'none{tag}_s' and 'none{tag}_m'"),
        (["--db", mysql_url, *named], f"'none{tag}_s' and 'none{tag}_m'"),
    ):
        code, out, err = run_cli(capsys, *args, *command)
        assert (code, out) == (1, ""), err
        assert f"has no table {missing}" in err
        assert "Check --db" in err


def test_a_wrong_mariadb_database_is_an_error(
    mysql_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(mysql_url).set(database=f"nodb_{uuid.uuid4().hex[:8]}")
    code, _, err = run_cli(capsys, "--db", url.render_as_string(hide_password=False), "stats")
    assert code == 1
    assert url.database is not None
    assert url.database in err


def test_a_sqlite_file_that_is_not_a_database_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"this is not a database file at all, just text" * 100)
    code, _, err = run_cli(capsys, "--db", str(path), "stats")
    assert code == 1
    assert str(path) in err


def test_an_export_that_fails_midway_leaves_the_old_backup_and_no_temp_file(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for redis in _redis(redis_url):
        redis.fill({f"s{i}": [{"n": i}] for i in range(5)})
        _poison_redis(redis, "s3")  # reading this session fails mid-export
        backup = tmp_path / "backup.jsonl"
        backup.write_text("an older backup\n", encoding="utf-8")
        code, _, err = run_cli(capsys, *redis.args, "export", "--all", "-o", str(backup))
        assert code == 1
        assert "WRONGTYPE" in err
        assert backup.read_text(encoding="utf-8") == "an older backup\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl"]
        fresh = tmp_path / "fresh.jsonl"
        code, _, err = run_cli(capsys, *redis.args, "export", "--all", "-o", str(fresh))
        assert code == 1
        assert not fresh.exists()  # never an empty or partial file


def test_items_added_before_1970_round_trip(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "old.jsonl"
    stamps = ["1960-05-01T12:00:00.250000+00:00", "1969-12-31T23:59:59.999000+00:00"]
    _write_export(
        export, [{"session_id": "old", "created_at": s, "item": {"n": s}} for s in stamps]
    )
    code, _, err = run_cli(capsys, *backend.args, "import", str(export))
    assert code == 0, err
    code, out, err = run_cli(capsys, *backend.args, "export", "old")
    assert code == 0, err
    assert [json.loads(line)["created_at"] for line in out.splitlines()] == stamps
    code, out, _ = run_cli(capsys, *backend.args, "list", "--json")
    assert json.loads(out.splitlines()[0])["items"] == 2


def _ids_on_every_primary(url: str, prefix: str, per_node: int) -> dict[str, list[str]]:
    """Session ids whose keys land on each primary of the cluster, `per_node` per primary."""
    from redis.cluster import RedisCluster

    from turnstore.memory.redis.keys import ClusterLayout

    layout = ClusterLayout(prefix)
    client = RedisCluster.from_url(url.replace("+cluster://", "://", 1))
    try:
        owners: dict[str, list[str]] = {node.name: [] for node in client.get_primaries()}
        for n in range(10_000):
            # Plain ids, and ids with braces and non-ASCII text of their own.
            session_id = (f"user-{n}", f"{{t}}é-{n}", f"a}}{{{n}")[n % 3]
            owner = owners[client.get_node_from_key(layout.items_key(session_id)).name]
            if len(owner) < per_node:
                owner.append(session_id)
            if all(len(ids) == per_node for ids in owners.values()):
                return owners
    finally:
        client.close()
    raise AssertionError(f"no {per_node} session ids for each primary: {owners}")


def test_the_cli_reaches_sessions_on_every_primary_of_a_cluster(
    redis_cluster_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """list, stats, export --all, import and prune --idle see the sessions of every primary."""
    source, target = (
        Backend(
            "redis-cluster",
            ["--db", redis_cluster_url, "--key-prefix", p],
            redis_cluster_url,
            prefix=p,
        )
        for p in (unique_prefix("clitest"), unique_prefix("clitest"))
    )
    try:
        owners = _ids_on_every_primary(redis_cluster_url, source.prefix, per_node=3)
        assert len(owners) == 3
        ids = [session_id for node_ids in owners.values() for session_id in node_ids]
        source.fill({sid: [{"n": n}] * (1 + n % 2) for n, sid in enumerate(ids)})
        expected_items = sum(1 + n % 2 for n in range(len(ids)))

        code, out, _ = run_cli(capsys, *source.args, "list", "--json", "--page-size", "100")
        assert code == 0
        assert sorted(json.loads(line)["session_id"] for line in out.splitlines()) == sorted(ids)
        code, out, _ = run_cli(capsys, *source.args, "stats", "--json")
        stats = json.loads(out)
        assert (stats["sessions"], stats["items"]) == (len(ids), expected_items)

        dump = tmp_path / "all.jsonl"
        code, _, err = run_cli(capsys, *source.args, "export", "--all", "-o", str(dump))
        assert code == 0, err
        assert f"exported {expected_items} items of {len(ids)} sessions" in err
        code, _, err = run_cli(capsys, *target.args, "import", str(dump))
        assert code == 0, err
        for n, session_id in enumerate(ids):
            assert target.items(session_id) == [{"n": n}] * (1 + n % 2)
        code, again, _ = run_cli(capsys, *target.args, "export", "--all")
        assert sorted(again.splitlines()) == sorted(dump.read_text(encoding="utf-8").splitlines())

        # Age one session on each primary; prune deletes exactly those, wherever they live.
        from redis.cluster import RedisCluster

        from turnstore.memory.redis.keys import ClusterLayout

        layout = ClusterLayout(source.prefix)
        old = [node_ids[0] for node_ids in owners.values()]
        client = RedisCluster.from_url(redis_cluster_url.replace("+cluster://", "://", 1))
        try:
            for session_id in old:
                client.zadd(layout.index_key(session_id), {session_id: 1_000}, xx=True)
        finally:
            client.close()
        code, out, err = run_cli(capsys, *source.args, "prune", "--idle", "1d")
        assert code == 0, err
        assert "deleted 3 sessions" in out
        code, out, _ = run_cli(capsys, *source.args, "list", "--json", "--page-size", "100")
        left = sorted(json.loads(line)["session_id"] for line in out.splitlines())
        assert left == sorted(set(ids) - set(old))
        for session_id in old:
            assert source.items(session_id) == []
    finally:
        for backend in (source, target):
            asyncio.run(_drop_prefix(redis_cluster_url, backend.prefix))


async def _drop_prefix(url: str, prefix: str) -> None:
    from turnstore.memory.redis.session import create_client_for_url

    client = create_client_for_url(url)
    await delete_prefix(client, prefix)
    await client.aclose()


# --- every database call of the CLI is bounded by --command-timeout ------------------------------


_PSQL = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-qtA", "-v", "ON_ERROR_STOP=1"]


def _psql(sql: str) -> None:
    subprocess.run([*_PSQL, "-c", sql], check=True, capture_output=True)


class _TableLock:
    """A psql process that holds an ACCESS EXCLUSIVE lock on a table until `release()`."""

    def __init__(self, table: str) -> None:
        self._psql = subprocess.Popen(
            _PSQL,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._psql.stdin is not None
        assert self._psql.stdout is not None
        self._psql.stdin.write(f'BEGIN; LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE; SELECT 1;\n')
        self._psql.stdin.flush()
        assert self._psql.stdout.readline().strip() == "1"  # the lock is held from here on

    def release(self) -> None:
        self._psql.communicate("ROLLBACK;\n", timeout=30)  # closes both pipes


@pytest.mark.parametrize("which", ["postgres_url", "pgbouncer_url"])
def test_a_database_that_does_not_answer_fails_within_the_command_timeout(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    url: str = request.getfixturevalue(which)
    tag = uuid.uuid4().hex[:8]
    tables = [f"lock{tag}_s", f"lock{tag}_m"]
    args = ["--db", url, "--sessions-table", tables[0], "--messages-table", tables[1]]
    export = tmp_path / "in.jsonl"
    _write_export(export, _records("kept", 2))
    assert run_cli(capsys, *args, "import", str(export))[0] == 0
    backup = tmp_path / "backup.jsonl"
    backup.write_text("an older backup\n", encoding="utf-8")
    _write_export(export, _records("new", 2))
    try:
        lock = _TableLock(tables[1])
        try:
            timeout = ["--command-timeout", "1"]
            for command in (
                ["stats"],
                ["list"],
                ["show", "kept"],
                ["export", "--all", "-o", str(backup)],
                ["import", str(export)],
                ["prune", "--idle", "1s"],
            ):
                code, out, err = run_cli(capsys, *args, *command, *timeout)
                assert code == 1, (command, out, err)
                assert "command_timeout=1" in err, (command, err)
                assert "Traceback" not in err
        finally:
            lock.release()
        assert backup.read_text(encoding="utf-8") == "an older backup\n"
        code, out, _ = run_cli(capsys, *args, "stats", "--json")
        assert code == 0
        assert (json.loads(out)["sessions"], json.loads(out)["items"]) == (1, 2)  # nothing written
    finally:
        _psql(f'DROP TABLE IF EXISTS "{tables[1]}", "{tables[0]}"')
