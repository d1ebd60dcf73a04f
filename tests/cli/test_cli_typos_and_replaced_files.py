"""`turnstore` typos that fit several commands or differ in case, error positions in files with a
byte-order mark or CRLF line ends, and `export -o` onto a symbolic link or another user's file.
Run as a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from test_cli_frictions import error_line, fill, turnstore


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("s", "did you mean 'show' or 'stats'?"),
        ("st", "did you mean 'stats'?"),
        ("ex", "did you mean 'export'?"),
        ("LIST", "did you mean 'list'?"),
    ],
)
def test_a_typo_names_every_command_it_begins_or_resembles(
    typo: str, hint: str, tmp_path: Path
) -> None:
    done = turnstore("--db", "x.db", typo, cwd=tmp_path)
    assert done.returncode == 2
    assert hint in error_line(done)


def test_an_unknown_command_without_a_suggestion_reads_as_one_sentence(tmp_path: Path) -> None:
    done = turnstore("--db", "x.db", "frobnicate", cwd=tmp_path)
    assert error_line(done).endswith(
        "unknown command 'frobnicate' (commands: list, show, export, import, clear, prune, stats)"
    )


@pytest.mark.parametrize(
    ("start", "end"), [("\ufeff", "\n"), ("", "\r\n")], ids=["byte-order mark", "CRLF"]
)
def test_a_bad_json_line_is_placed_as_an_editor_shows_it(
    start: str, end: str, tmp_path: Path
) -> None:
    good = json.dumps({"session_id": "a", "item": {"role": "user", "content": "x"}})
    bad = '{"session_id": "b", "item": {oops}}'  # column 30 is the 'o'
    (tmp_path / "in.jsonl").write_bytes((start + good + end + bad + end).encode())
    done = turnstore("--db", "x.db", "import", "in.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert "in.jsonl line 2, column 30 is not JSON" in error_line(done)


def test_export_onto_a_symbolic_link_replaces_the_file_it_points_to(tmp_path: Path) -> None:
    fill(tmp_path / "s.db", {"a": 2})
    target = tmp_path / "exports" / "2026-12-06.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    target.chmod(0o640)
    (tmp_path / "latest.jsonl").symlink_to(target)
    done = turnstore("--db", "s.db", "export", "--all", "-o", "latest.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "latest.jsonl").is_symlink()
    assert len(target.read_text().splitlines()) == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["2026-12-06.jsonl"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_export_by_root_onto_a_users_file_keeps_its_owner_and_group(tmp_path: Path) -> None:
    fill(tmp_path / "s.db", {"a": 1})
    out = tmp_path / "backup.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    os.chown(out, 1234, 5678)
    done = turnstore("--db", "s.db", "export", "--all", "-o", "backup.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    after = out.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (1234, 5678, 0o640)
    assert out.read_text() != "old\n"
