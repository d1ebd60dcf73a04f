"""Progress output (a bar on a terminal, plain lines otherwise) and the closing summary."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TextIO

from .tokens import estimate_cost
from .translator import ModelReply

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
    queued: list[str] = field(default_factory=list)
    queued_requests: dict[str, list[str]] = field(default_factory=dict)
    calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    request_chars: int = 0
    reply_chars: int = 0
    batch_calls: int = 0
    batch_input_tokens: int = 0
    batch_cached_tokens: int = 0
    batch_output_tokens: int = 0
    review_calls: int = 0
    review_input_tokens: int = 0
    review_cached_tokens: int = 0
    review_output_tokens: int = 0
    review_request_chars: int = 0
    review_reply_chars: int = 0
    blockers: list[tuple[str, str]] = field(default_factory=list)
    minors: list[tuple[str, str]] = field(default_factory=list)
    discarded: list[tuple[str, str]] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)

    def count(self, reply: ModelReply, *, review: bool) -> None:
        """Add one model reply's usage (a review's apart; a batch reply's also apart)."""
        if review:
            self.review_calls += 1
            self.review_input_tokens += reply.input_tokens
            self.review_cached_tokens += reply.cached_tokens
            self.review_output_tokens += reply.output_tokens
            self.review_request_chars += reply.request_chars
            self.review_reply_chars += len(reply.text)
            return
        self.calls += 1
        self.input_tokens += reply.input_tokens
        self.cached_tokens += reply.cached_tokens
        self.output_tokens += reply.output_tokens
        self.request_chars += reply.request_chars
        self.reply_chars += len(reply.text)
        if reply.batched:
            self.batch_calls += 1
            self.batch_input_tokens += reply.input_tokens
            self.batch_cached_tokens += reply.cached_tokens
            self.batch_output_tokens += reply.output_tokens

    def translation_cost(self, model: str) -> float | None:
        """The estimated USD cost of the translation calls: batch replies at the Batch API's
        price, cached input at the cached-input price; `None` for a model without a price."""
        direct = estimate_cost(
            model,
            self.input_tokens - self.batch_input_tokens,
            self.output_tokens - self.batch_output_tokens,
            cached_tokens=self.cached_tokens - self.batch_cached_tokens,
        )
        batched = estimate_cost(
            model,
            self.batch_input_tokens,
            self.batch_output_tokens,
            cached_tokens=self.batch_cached_tokens,
            batch=True,
        )
        return None if direct is None or batched is None else direct + batched


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
        elif outcome == "queued":
            self.totals.queued.append(key)
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
        queued = f", queued in the batch: {len(t.queued)}" if t.queued else ""
        from_batch = f" ({t.batch_calls} answered by the batch)" if t.batch_calls else ""
        lines = [
            f"translated: {len(t.translated)}, kept: {len(t.kept)}, failed: {len(t.failed)}, "
            f"removed: {len(t.removed)}{queued}",
            f"API calls: {t.calls}{from_batch}, tokens in: {t.input_tokens} "
            f"({t.cached_tokens} cached), tokens out: {t.output_tokens}, "
            f"estimated cost: {_dollars(model, t.translation_cost(model))}",
        ]
        if review_model is not None:
            review_cost = estimate_cost(
                review_model,
                t.review_input_tokens,
                t.review_output_tokens,
                cached_tokens=t.review_cached_tokens,
            )
            lines.append(
                f"review calls: {t.review_calls}, tokens in: {t.review_input_tokens} "
                f"({t.review_cached_tokens} cached), tokens out: {t.review_output_tokens}, "
                f"estimated cost: {_dollars(review_model, review_cost)}; "
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
            "queued": t.queued,
            "translation": {
                "calls": t.calls,
                "batch_calls": t.batch_calls,
                "input_tokens": t.input_tokens,
                "cached_tokens": t.cached_tokens,
                "output_tokens": t.output_tokens,
            },
            "review": {
                "calls": t.review_calls,
                "input_tokens": t.review_input_tokens,
                "cached_tokens": t.review_cached_tokens,
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


def _dollars(model: str, cost: float | None) -> str:
    return f"${cost:.4f}" if cost is not None else f"unknown (no price for {model})"
