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

__all__ = [
    "BATCH_DISCOUNT",
    "CACHE_MIN_TOKENS",
    "PRICES",
    "cached_prefix_tokens",
    "estimate_cost",
    "estimate_output_tokens",
    "estimate_tokens",
]

PRICES: dict[str, tuple[float, float, float]] = {
    "o3": (2.00, 0.50, 8.00),
    "o4-mini": (1.10, 0.275, 4.40),
    "o3-mini": (1.10, 0.55, 4.40),
    "gpt-4.1": (2.00, 0.50, 8.00),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-5": (1.25, 0.125, 10.00),
    "gpt-5-mini": (0.25, 0.025, 2.00),
}
"""USD per million (input, cached input, output) tokens, as published by OpenAI; edit when
prices change."""

BATCH_DISCOUNT = 0.5
"""What the Batch API charges, as a fraction of the price of the same request sent directly."""

CACHE_MIN_TOKENS = 1024
"""OpenAI caches a request's prefix only from this many tokens on (then in steps of 128)."""

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


def cached_prefix_tokens(request: str, earlier: list[str]) -> int:
    """Estimate the input tokens of `request` the API would serve from its prompt cache.

    The cache holds the prefixes of earlier requests: the longest prefix `request` shares with
    one of `earlier` counts, rounded down to the cache's 128-token steps, and only from
    `CACHE_MIN_TOKENS` on.
    """
    shared = 0
    for other in earlier:
        low, high = shared, min(len(request), len(other))  # binary search on slices: C speed
        while low < high:
            mid = (low + high + 1) // 2
            if request[:mid] == other[:mid]:
                low = mid
            else:
                high = mid - 1
        shared = low
    tokens = estimate_tokens(request[:shared])
    if tokens < CACHE_MIN_TOKENS:
        return 0
    return CACHE_MIN_TOKENS + (tokens - CACHE_MIN_TOKENS) // 128 * 128


def estimate_cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    cached_tokens: int = 0,
    batch: bool = False,
) -> float | None:
    """Return the USD cost of the tokens with `model`, or `None` for a model without a price.

    Args:
        model: The model name.
        input_tokens: All input tokens, the cached ones included (as the API reports them).
        output_tokens: Output tokens (reasoning included).
        cached_tokens: The part of `input_tokens` served from the prompt cache, billed at the
            cached-input price.
        batch: Whether the tokens went through the Batch API (`BATCH_DISCOUNT` of the price).
    """
    price = PRICES.get(model)
    if price is None:
        return None
    cached = min(cached_tokens, input_tokens)
    cost = (input_tokens - cached) * price[0] + cached * price[1] + output_tokens * price[2]
    return cost / 1_000_000 * (BATCH_DISCOUNT if batch else 1.0)
