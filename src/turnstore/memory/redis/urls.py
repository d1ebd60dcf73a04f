"""The URLs that name a Redis server or a Redis Cluster (no third-party import here)."""

from __future__ import annotations

__all__ = ["CLUSTER_SCHEMES", "SCHEMES", "is_redis_url"]

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
"""A cluster URL names one or more nodes; the client discovers the others."""

SCHEMES = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)


def is_redis_url(text: str) -> bool:
    """Tell whether a storage target is a Redis or Redis Cluster URL.

    Args:
        text: The target, as given.

    Returns:
        `True` for `redis://`, `rediss://`, `unix://`, `redis+cluster://` and
        `rediss+cluster://`.
    """
    return text.startswith(SCHEMES)
