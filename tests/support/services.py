"""Skipping a test whose service is absent, or failing it when the run requires every service."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest


def services_required() -> bool:
    """True when a missing service must fail the run instead of skipping."""
    return os.environ.get("TURNSTORE_REQUIRE_SERVICES") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip with `reason`, or fail under TURNSTORE_REQUIRE_SERVICES=1."""
    if services_required():
        pytest.fail(f"{reason} (TURNSTORE_REQUIRE_SERVICES=1 forbids skipping)")
    pytest.skip(reason)


@dataclass(frozen=True)
class SSLPostgres:
    """A PostgreSQL that accepts only SSL connections, and its CA certificate."""

    url: str
    """An async SQLAlchemy URL without SSL parameters."""
    ca: str
    """The path of the CA certificate that signed the server's certificate."""
