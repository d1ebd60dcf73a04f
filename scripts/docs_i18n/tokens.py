"""Token estimates and cost, for `--dry-run` and the closing summary.

An exact count needs the model's tokenizer. `tiktoken` fetches its encoding files over the
network at run time (it fails offline, as on CI machines without internet), so `--dry-run`
uses a documented approximation instead: one token per 4 characters of ASCII text, one token
per non-ASCII character. Measured against the o200k tokenizer on this project's docs, it
overestimates by about 10% for English pages and about 20% for Japanese, Korean and Chinese
pages, which is safe for a cost estimate. Real runs report the exact usage the API returns.
"""

from __future__ import annotations

import math

__all__ = ["PRICES", "estimate_cost", "estimate_output_tokens", "estimate_tokens"]

PRICES: dict[str, tuple[float, float]] = {
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
}
"""USD per million (input, output) tokens, as published by OpenAI; edit when prices change."""

_REASONING_FACTOR = {"minimal": 0.0, "low": 0.5, "medium": 1.5, "high": 3.0}
"""Estimated reasoning tokens per output token, by reasoning effort (drafts and reviews)."""


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of `text`: ASCII characters / 4 plus one per other character."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def estimate_output_tokens(source_tokens: int, effort: str) -> int:
    """Estimate the billed output tokens of translating `source_tokens` of English.

    The translation itself is taken as 1.3 times the English (CJK text takes more tokens), and
    reasoning tokens (billed as output) as a multiple of that depending on the effort.
    """
    translation = math.ceil(source_tokens * 1.3)
    return translation + math.ceil(translation * _REASONING_FACTOR.get(effort, 1.5))


def estimate_cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """Return the USD cost of the tokens with `model`, or `None` for a model without a price."""
    price = PRICES.get(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
