"""Skipping a test whose service is absent, or failing it when the run requires every service."""

from __future__ import annotations

import os

import pytest


def services_required() -> bool:
    """True when a missing service must fail the run instead of skipping."""
    return os.environ.get("TURNSTORE_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip with `reason`, or fail under TURNSTORE_REQUIRE_SERVICES=1."""
    if services_required():
        pytest.fail(f"{reason} (TURNSTORE_REQUIRE_SERVICES=1 forbids skipping)")
    pytest.skip(reason)
