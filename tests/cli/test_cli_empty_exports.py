"""A wrong `--db` never replaces a good backup: an export that finds nothing is an error.

A nightly `turnstore export --all -o nightly.jsonl` pointed at the wrong database (or table
names, or key prefix) used to succeed and leave a 0-byte file where the last good backup was.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from test_session_cli import Backend, backend, run_cli

__all__ = ["backend"]  # the fixture: every backend the CLI supports

GOOD_BACKUP = '{"session_id": "s", "created_at": null, "item": {"role": "user"}}\n'


def _empty(backend: Backend) -> None:
    """Leave the backend's tables in place (SQL) with no session in them."""
    backend.fill({"gone": [{"role": "user", "content": "x"}]})

    async def clear() -> None:
        session = backend.session("gone")
        try:
            await session.clear_session()  # type: ignore[attr-defined]
        finally:
            await session.aclose()  # type: ignore[attr-defined]

    asyncio.run(clear())


def _left(tmp_path: Path) -> list[str]:
    return sorted(
        p.name for p in tmp_path.iterdir() if p.suffix in (".jsonl", ".tmp") or ".tmp" in p.name
    )


def test_exporting_nothing_leaves_the_backup_untouched_unless_allowed(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _empty(backend)
    backup = tmp_path / "nightly.jsonl"
    backup.write_text(GOOD_BACKUP, encoding="utf-8")
    code, out, err = run_cli(capsys, *backend.args, "export", "--all", "-o", str(backup))
    assert (code, out) == (1, "")
    assert "nothing to export" in err
    assert f"{backup} was left as it was" in err
    assert "--allow-empty" in err
    assert backup.read_text(encoding="utf-8") == GOOD_BACKUP
    assert _left(tmp_path) == ["nightly.jsonl"]  # no temporary file left behind
    # To stdout: nothing printed, and the exit status says so.
    code, out, err = run_cli(capsys, *backend.args, "export", "--all")
    assert (code, out) == (1, "")
    assert "nothing to export" in err
    # Said explicitly, an empty export is written.
    code, out, err = run_cli(
        capsys, *backend.args, "export", "--all", "-o", str(backup), "--allow-empty"
    )
    assert code == 0, err
    assert "exported 0 items of 0 sessions" in err
    assert backup.read_bytes() == b""
    code, out, err = run_cli(capsys, *backend.args, "export", "--all", "--allow-empty")
    assert (code, out) == (0, "")


def test_a_wrong_target_never_replaces_the_last_good_backup(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend.fill({"kept": [{"role": "user", "content": "x"}]})
    backup = tmp_path / "nightly.jsonl"
    backup.write_text(GOOD_BACKUP, encoding="utf-8")
    if backend.name in ("redis", "redis-cluster"):
        wrong = [*backend.args, "--key-prefix", "typo-" + backend.prefix]
    else:
        wrong = [*backend.args, "--sessions-table", "typo"]
    code, _, err = run_cli(capsys, *wrong, "export", "--all", "-o", str(backup))
    assert code == 1
    assert "typo" in err
    if backend.name not in ("redis", "redis-cluster"):  # Redis has no tables to miss
        code, out, err = run_cli(capsys, *wrong, "stats")
        assert (code, out) == (1, "")
        assert "has no table 'typo'" in err
    assert backup.read_text(encoding="utf-8") == GOOD_BACKUP
    assert _left(tmp_path) == ["nightly.jsonl"]
    # The right target still exports.
    code, _, err = run_cli(capsys, *backend.args, "export", "--all", "-o", str(backup))
    assert code == 0, err
    assert "exported 1 item of 1 session" in err


def test_a_sqlite_file_without_the_tables_never_replaces_the_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other-app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    backup = tmp_path / "nightly.jsonl"
    backup.write_text(GOOD_BACKUP, encoding="utf-8")
    code, _, err = run_cli(capsys, "--db", str(other), "export", "--all", "-o", str(backup))
    assert code == 1
    assert "has no table 'agent_sessions' and 'agent_messages'" in err
    assert backup.read_text(encoding="utf-8") == GOOD_BACKUP


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["stats"],
        ["export", "--all"],
        ["show", "a"],
        ["clear", "a"],
        ["prune", "--idle", "1d"],
        ["prune", "--idle", "1d", "--dry-run"],
    ],
)
def test_a_sqlite_path_that_does_not_exist_is_not_created(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "conversatons.db"
    code, out, err = run_cli(capsys, "--db", str(typo), *command)
    assert code in (1, 2)
    assert out == ""
    assert f"no SQLite database at {str(typo)!r}" in err
    assert list(tmp_path.iterdir()) == []
