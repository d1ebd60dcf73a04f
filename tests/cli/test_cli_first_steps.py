"""What a newcomer meets in the first hour with the `turnstore` command, through the real CLI."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_session_cli import Backend, backend, run_cli

from turnstore.cli import build_parser, main

__all__ = ["backend"]  # the fixture: every backend the CLI supports

HIDE = "import sys\nsys.modules[{module!r}] = None\n"


def _child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("module", "target", "api_name", "extra"),
    [
        ("redis", "redis://127.0.0.1:6379/0", "RedisSession", "redis"),
        ("redis", "redis+cluster://127.0.0.1:7001", "RedisSession", "redis"),
        ("sqlalchemy", "postgresql://postgres@127.0.0.1/app", "SQLAlchemySession", "postgres"),
    ],
)
def test_without_an_extra_the_cli_names_it_in_the_api_s_words(
    module: str, target: str, api_name: str, extra: str
) -> None:
    hide = HIDE.format(module=module)
    cli = _child(
        hide + f"from turnstore.cli import main\nsys.exit(main(['--db', {target!r}, 'list']))"
    )
    api = _child(
        hide
        + f"try:\n    from turnstore.extensions.memory import {api_name}\n"
        + "except ImportError as exc:\n    print(exc)"
    )
    scheme = target.partition("://")[0]
    assert cli.returncode == 2
    assert cli.stderr == (
        f"turnstore: error: a {scheme}:// URL needs the {extra} extra: "
        f"pip install 'turnstore[{extra}]'\n"
    )
    assert api.stdout == f"{api_name} needs the {extra} extra: pip install 'turnstore[{extra}]'\n"
    assert "No module named" not in cli.stderr


@pytest.mark.parametrize(
    "target", ["redis://127.0.0.1:6379/abc", "redis://127.0.0.1:6379/1x", "rediss://h:6380/-1"]
)
def test_a_redis_url_whose_database_is_not_a_number_is_refused(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--db", target, "stats")
    assert (code, out) == (2, "")
    assert "the database of a Redis URL is a whole number, as in redis://host:6379/0" in err
    from turnstore.extensions.memory import RedisSession

    with pytest.raises(ValueError, match="is a whole number"):
        RedisSession.from_url("s", target)


def test_python_dash_m_turnstore_runs_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "turnstore", "--db", str(tmp_path / "x.db"), "stats"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no SQLite database at" in done.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "turnstore", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert helped.returncode == 0
    assert helped.stdout.startswith("usage: turnstore ")


def test_every_command_s_help_describes_it(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        assert sub.description, f"{name} has no description"
        with pytest.raises(SystemExit) as exited:
            main([name, "--help"])
        assert exited.value.code == 0
        out = " ".join(capsys.readouterr().out.split())
        assert " ".join(sub.description.split()) in out
    prune = subparsers.choices["prune"].format_help()
    assert "--dry-run" in prune
    assert "with all its items" in " ".join(prune.split())


def test_prune_dry_run_lists_what_it_would_delete_and_deletes_nothing(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill({"old-1": [{"role": "user", "content": "a"}], "old-2": [{"n": 1}, {"n": 2}]})
    code, out, err = run_cli(capsys, *backend.args, "prune", "--idle", "0s", "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    stamp = r"last activity \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    assert [re.sub(stamp, "last activity T UTC", line) for line in sorted(lines[:-1])] == [
        "would delete 'old-1' (1 item, last activity T UTC)",
        "would delete 'old-2' (2 items, last activity T UTC)",
    ]
    assert lines[-1] == (
        "dry run: 2 sessions idle for more than 0s would be deleted; nothing was deleted"
    )
    assert backend.items("old-2") == [{"n": 1}, {"n": 2}]
    code, out, _ = run_cli(capsys, *backend.args, "prune", "--idle", "30d", "--dry-run")
    assert out.splitlines() == [
        "dry run: 0 sessions idle for more than 30d would be deleted; nothing was deleted"
    ]
    code, out, _ = run_cli(capsys, *backend.args, "prune", "--idle", "0s")
    assert out == "deleted 2 sessions idle for more than 0s\n"


def test_import_of_an_empty_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "app.db"
    for content in ("", "\n\n  \n"):
        empty = tmp_path / "empty.jsonl"
        empty.write_text(content, encoding="utf-8")
        code, out, err = run_cli(capsys, "--db", str(db), "import", str(empty))
        assert (code, out) == (1, "")
        assert f"nothing to import: {empty} holds no records" in err
    assert not db.exists()  # nothing was opened, let alone created


def test_import_file_errors_mirror_export_s_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "app.db")
    missing = tmp_path / "nightly.jsonl"
    code, _, err = run_cli(capsys, "--db", db, "import", str(missing))
    assert code == 1
    assert err == f"turnstore: error: cannot read {missing}: No such file or directory\n"
    code, _, err = run_cli(capsys, "--db", db, "import", str(tmp_path))
    assert code == 1
    assert err == (
        f"turnstore: error: cannot read {tmp_path}: it is a directory; "
        "give the export file's path\n"
    )


def test_counts_are_worded_with_the_right_plural(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "app.db")
    one = tmp_path / "one.jsonl"
    record = {"session_id": "s", "created_at": None, "item": {"role": "user", "content": "x"}}
    one.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "--db", db, "import", str(one))
    assert (code, err) == (0, "imported 1 item into 1 session\n")
    code, _, err = run_cli(capsys, "--db", db, "export", "s", "-o", str(tmp_path / "back.jsonl"))
    assert err == f"exported 1 item of 1 session to {tmp_path / 'back.jsonl'}\n"
    code, _, err = run_cli(capsys, "--db", db, "import", str(one))
    assert "1 of the file's sessions already holds items" in err
    assert "'s' (1 item)" in err
    code, out, _ = run_cli(capsys, "--db", db, "clear", "s")
    assert out == "cleared session 's' (1 item)\n"
