"""Ctrl-C (SIGINT) and SIGTERM sent to `turnstore`, run as a user runs it: the import stops after
whole sessions and says what it wrote and how to finish; an interrupt at any moment, also as the
process exits, ends it with status 130 (SIGINT) or 143 (SIGTERM) and one line, no traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

SESSIONS = 1000
ITEMS = 5


def export(path: Path, sessions: int, items: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for s in range(sessions):
            for n in range(items):
                record = {"session_id": f"s{s:04d}", "created_at": None, "item": {"n": n}}
                out.write(json.dumps(record) + "\n")
    return path


def start(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TURNSTORE_DB"}
    return subprocess.Popen(
        [sys.executable, "-m", "turnstore.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def stored_sessions(db: Path) -> dict[str, int]:
    """Items per session in the file (an empty dict before the tables exist)."""
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            rows = conn.execute(
                "SELECT session_id, count(*) FROM agent_messages GROUP BY session_id"
            ).fetchall()
    except sqlite3.OperationalError:  # no table yet
        return {}
    return dict(rows)


def wait_for_first_session(db: Path, process: subprocess.Popen[str]) -> None:
    """Poll the file until the import has committed its first session."""
    deadline = time.monotonic() + 60
    while not stored_sessions(db):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the import wrote no session within 60 s"
        time.sleep(0.005)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_import_says_what_it_wrote_and_replace_finishes_it(
    signum: int, status: int, tmp_path: Path
) -> None:
    db = tmp_path / "target.db"
    file = export(tmp_path / "big.jsonl", SESSIONS, ITEMS)
    process = start("--db", str(db), "import", str(file))
    wait_for_first_session(db, process)
    process.send_signal(signum)
    _, err = process.communicate(timeout=120)
    assert process.returncode == status, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    name = signal.Signals(signum).name
    stored = stored_sessions(db)
    # Every session written is whole, and the line counts exactly those.
    assert set(stored.values()) == {ITEMS}
    if len(stored) < SESSIONS:
        assert lines[0].startswith(
            f"turnstore: interrupted ({name}): {len(stored)} of {SESSIONS} sessions "
            f"{'was' if len(stored) == 1 else 'were'} imported, each whole ('s0000'"
        ), err
        assert lines[0].endswith("Run the same import with --replace to finish it"), err
        assert sorted(stored) == [f"s{s:04d}" for s in range(len(stored))]
    else:  # the import ended before the signal came: it says so
        assert lines[0] == (
            f"turnstore: interrupted ({name}): every session of the file was imported ({SESSIONS})"
        )
    finish = start("--db", str(db), "import", "--replace", str(file))
    _, err = finish.communicate(timeout=300)
    assert finish.returncode == 0, err
    assert stored_sessions(db) == {f"s{s:04d}": ITEMS for s in range(SESSIONS)}


def test_an_interrupt_as_the_command_ends_is_one_line_and_status_130(tmp_path: Path) -> None:
    """Signals sent at several moments after the import's last line: while it closes the store,
    as the interpreter would exit, or once it has exited."""
    file = export(tmp_path / "small.jsonl", 20, 1)
    outcomes = set()
    for attempt in range(12):
        db = tmp_path / f"target{attempt}.db"
        process = start("--db", str(db), "import", str(file))
        assert process.stderr is not None
        assert process.stderr.readline().startswith("imported 20 items")
        for _ in range(attempt * 2000):  # a different moment each time, no sleep
            pass
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
        assert "Traceback" not in rest, rest
        if process.returncode == 0:  # it had exited before the signal came
            assert rest == ""
        else:
            assert process.returncode == 130, rest
            assert re.fullmatch(
                r"turnstore: interrupted \(SIGINT\): every session of the file was imported "
                r"\(20\)\n",
                rest,
            ), rest
        outcomes.add(process.returncode)
    assert outcomes <= {0, 130}


def test_an_interrupted_append_finishes_by_dropping_the_first_sessions_lines(
    tmp_path: Path,
) -> None:
    """cli.md: sessions are imported in the order they first appear in the file, so after an
    interrupted `--append`, the lines of the first N sessions come out and `--append` runs again.
    The file names its sessions out of sorted order, and interleaves their lines."""
    order = [f"s{(s * 389) % SESSIONS:04d}" for s in range(SESSIONS)]  # not sorted
    lines = [
        json.dumps({"session_id": sid, "created_at": None, "item": {"n": n}}) + "\n"
        for part in (range(0, 3), range(3, ITEMS))  # each session's lines in two places
        for sid in order
        for n in part
    ]
    db = tmp_path / "target.db"
    before = tmp_path / "before.jsonl"
    before.write_text(
        "".join(
            json.dumps({"session_id": sid, "created_at": None, "item": {"before": 1}}) + "\n"
            for sid in order
        ),
        encoding="utf-8",
    )
    first = start("--db", str(db), "import", str(before))
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    file = tmp_path / "big.jsonl"
    file.write_text("".join(lines), encoding="utf-8")
    process = start("--db", str(db), "import", "--append", str(file))
    deadline = time.monotonic() + 60
    while max(stored_sessions(db).values()) == 1:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the import wrote no session within 60 s"
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    done = re.match(r"turnstore: interrupted \(SIGINT\): (\d+) of 1000 sessions", err)
    imported = int(done.group(1)) if done else SESSIONS  # or it ended before the signal came
    stored = stored_sessions(db)
    assert {sid for sid, count in stored.items() if count > 1} == set(order[:imported]), err
    # What cli.md says to do: delete every line of the first N sessions, --append the rest.
    rest = tmp_path / "rest.jsonl"
    skip = set(order[:imported])
    rest.write_text(
        "".join(line for line in lines if json.loads(line)["session_id"] not in skip),
        encoding="utf-8",
    )
    if imported < SESSIONS:
        finish = start("--db", str(db), "import", "--append", str(rest))
        _, err = finish.communicate(timeout=300)
        assert finish.returncode == 0, err
    assert stored_sessions(db) == dict.fromkeys(order, 1 + ITEMS)
