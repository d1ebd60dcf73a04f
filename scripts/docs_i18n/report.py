"""Progress output (a bar on a terminal, plain lines otherwise) and the closing summary."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from .tokens import estimate_cost

__all__ = ["Reporter", "Totals"]


@dataclass
class Totals:
    """What a run did."""

    translated: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    unadopted: list[str] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    request_chars: int = 0
    reply_chars: int = 0
    review_calls: int = 0
    review_input_tokens: int = 0
    review_output_tokens: int = 0
    review_request_chars: int = 0
    review_reply_chars: int = 0
    blockers: list[tuple[str, str]] = field(default_factory=list)
    minors: list[tuple[str, str]] = field(default_factory=list)
    discarded: list[tuple[str, str]] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)


class Reporter:
    """Writes progress to `stream`: a one-line bar on a terminal, one line per event in CI.

    Args:
        stream: Where to write (standard error by default).
        bar: Force the bar on or off; by default on when `stream` is a terminal and `CI` is unset.
    """

    def __init__(self, stream: TextIO | None = None, *, bar: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            bar = self.stream.isatty() and not os.environ.get("CI")
        self.bar = bar
        self.total = 0
        self.done = 0
        self.totals = Totals()

    def start(self, total: int) -> None:
        """Announce how many translations (page x language) will be worked on."""
        self.total = total
        if not self.bar:
            self._line(f"{total} translation(s) to update")
        self._draw()

    def note(self, text: str) -> None:
        """Print an informational line (a retry, a repair)."""
        self._line(text)

    def finished(self, key: str, outcome: str, detail: str = "") -> None:
        """Record that translation `key` ("ja/index.md") ended with `outcome`."""
        self.done += 1
        if outcome == "translated":
            self.totals.translated.append(key)
        elif outcome == "failed":
            self.totals.failed.append((key, detail))
        else:
            self.totals.kept.append(key)
        suffix = f" ({detail})" if detail else ""
        self._line(f"[{self.done}/{self.total}] {key}: {outcome}{suffix}")

    def _line(self, text: str) -> None:
        if self.bar:
            self.stream.write("\r\x1b[2K")
        self.stream.write(text + "\n")
        self._draw()

    def _draw(self) -> None:
        if not self.bar or not self.total:
            self.stream.flush()
            return
        width = 30
        filled = width * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}")
        self.stream.flush()

    def summary(self, model: str, review_model: str | None = None) -> str:
        """Return the closing summary lines (review calls and their cost on a line of their own).

        Args:
            model: The translation model (for the cost).
            review_model: The review model, or `None` when the run had no review pass.
        """
        t = self.totals
        lines = [
            f"translated: {len(t.translated)}, kept: {len(t.kept)}, failed: {len(t.failed)}, "
            f"removed: {len(t.removed)}",
            f"API calls: {t.calls}, tokens in: {t.input_tokens}, tokens out: {t.output_tokens}, "
            f"estimated cost: {_cost(model, t.input_tokens, t.output_tokens)}",
        ]
        if review_model is not None:
            lines.append(
                f"review calls: {t.review_calls}, tokens in: {t.review_input_tokens}, "
                f"tokens out: {t.review_output_tokens}, estimated cost: "
                f"{_cost(review_model, t.review_input_tokens, t.review_output_tokens)}; "
                f"findings: {len(t.blockers)} blocker(s), {len(t.minors)} minor, "
                f"{len(t.discarded)} discarded (quotes not found)"
            )
        lines += [f"FAILED {key}: {why}" for key, why in t.failed]
        lines += [f"minor {key}: {what}" for key, what in t.minors]
        lines += [f"removed {key}" for key in t.removed]
        lines += [f"moved {key} (its English page moved)" for key in t.moved]
        lines += [
            f"not adopted {key}: a translation without a manifest entry is left alone; "
            "check it and run --adopt (or --force to retranslate)"
            for key in t.unadopted
        ]
        return "\n".join(lines)

    def report(self) -> dict[str, object]:
        """The run's report as JSON-ready data (what the summary says, findings in full)."""
        t = self.totals
        return {
            "translated": t.translated,
            "kept": t.kept,
            "failed": [{"page": k, "why": w} for k, w in t.failed],
            "removed": t.removed,
            "moved": t.moved,
            "translation": {
                "calls": t.calls,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
            },
            "review": {
                "calls": t.review_calls,
                "input_tokens": t.review_input_tokens,
                "output_tokens": t.review_output_tokens,
                "blockers": [{"page": k, "finding": f} for k, f in t.blockers],
                "minor": [{"page": k, "finding": f} for k, f in t.minors],
                "discarded": [{"page": k, "finding": f} for k, f in t.discarded],
            },
        }

    def close(self) -> None:
        """End the progress bar's line."""
        if self.bar and self.total:
            self.stream.write("\n")
            self.stream.flush()


def _cost(model: str, input_tokens: int, output_tokens: int) -> str:
    cost = estimate_cost(model, input_tokens, output_tokens)
    return f"${cost:.4f}" if cost is not None else f"unknown (no price for {model})"
