"""Retry delays, atomic writes, progress output and the manifest file."""

from __future__ import annotations

import email.utils
import io
import os
import time
from pathlib import Path

import pytest

from docs_i18n.atomic import atomic_write_text, remove_file
from docs_i18n.manifest import Manifest, ManifestEntry
from docs_i18n.report import Reporter
from docs_i18n.tokens import estimate_cost, estimate_tokens
from docs_i18n.translator import RetryPolicy, retry_delay


def test_backoff_doubles_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    for attempt, full in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        delays = {retry_delay(policy, attempt) for _ in range(50)}
        assert all(full * 0.5 <= d < full for d in delays)
        assert len(delays) > 1  # jittered


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "100000"}, 300.0),  # capped at max_retry_after
    ],
)
def test_retry_after_wins_over_backoff(headers: dict[str, str], expected: float) -> None:
    assert retry_delay(RetryPolicy(base_delay=30.0), 3, headers) == expected


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    delay = retry_delay(RetryPolicy(), 0, {"retry-after": when})
    assert 15 <= delay <= 21


def test_unparsable_retry_after_falls_back_to_backoff() -> None:
    delay = retry_delay(RetryPolicy(base_delay=1.0), 0, {"retry-after": "soon"})
    assert 0.5 <= delay < 1.0


def test_atomic_write_replaces_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "docs" / "ja" / "page.md"
    atomic_write_text(target, "old\n")

    def _crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # as if Ctrl-C arrived just before the rename

    monkeypatch.setattr(os, "replace", _crash)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new\n" * 10_000)
    monkeypatch.undo()
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.md"]
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"


def test_remove_file_prunes_empty_folders_only(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for rel in ["ja/a/b/x.md", "ja/keep.md"]:
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text("x")
    remove_file(docs / "ja" / "a" / "b" / "x.md", stop_at=docs)
    assert not (docs / "ja" / "a").exists()
    assert (docs / "ja" / "keep.md").exists()


def test_progress_bar_on_a_terminal_and_plain_lines_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = io.StringIO()
    reporter = Reporter(plain)  # a StringIO is not a terminal
    assert reporter.bar is False
    reporter.start(2)
    reporter.finished("ja/index.md", "translated", "3 of 3 section(s)")
    reporter.close()
    assert "\r" not in plain.getvalue()
    assert "[1/2] ja/index.md: translated (3 of 3 section(s))\n" in plain.getvalue()

    class _Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = _Terminal()
    monkeypatch.setenv("CI", "true")
    assert Reporter(terminal).bar is False  # CI logs get plain lines even on a pseudo-terminal
    monkeypatch.delenv("CI")
    bar = Reporter(terminal)
    assert bar.bar is True
    bar.start(2)
    bar.finished("ja/index.md", "translated")
    bar.finished("ko/index.md", "failed", "why")
    bar.close()
    out = terminal.getvalue()
    assert "\r[###############...............] 1/2" in out
    assert "\r[##############################] 2/2" in out
    summary = bar.summary("o3")
    assert "translated: 1, kept: 0, failed: 1" in summary
    assert "FAILED ko/index.md: why" in summary


def test_manifest_round_trip_is_stable(tmp_path: Path) -> None:
    path = tmp_path / "i18n" / "manifest.json"
    manifest = Manifest()
    manifest.set("b.md", "zh", ManifestEntry("sha256:1", ["sha256:a"]))
    manifest.set("a.md", "ja", ManifestEntry("sha256:2", ["sha256:b", "sha256:c"]))
    manifest.save(path)
    assert Manifest.load(path) == manifest
    assert path.read_text().index('"a.md"') < path.read_text().index('"b.md"')
    with pytest.raises(ValueError, match="version"):
        Manifest.loads('{"pages": {}}')
    with pytest.raises(ValueError, match="malformed"):
        Manifest.loads('{"version": 1, "pages": {"a.md": {"ja": {}}}}')


def test_token_estimate_and_cost() -> None:
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("セッション") == 5
    assert estimate_cost("o3", 1_000_000, 1_000_000) == pytest.approx(10.0)
    assert estimate_cost("unknown-model", 1, 1) is None
