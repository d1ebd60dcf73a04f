"""The URLs that name a Redis server or a Redis Cluster (no third-party import here)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

__all__ = ["CLUSTER_SCHEMES", "SCHEMES", "check_database", "is_redis_url"]

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


def check_database(url: str) -> None:
    """Refuse a Redis URL whose database is not a whole number.

    redis-py reads the database from the URL's path (`redis://host:6379/2`) and silently uses
    database 0 when that path is not a number (`/abc`, `/1x`): a typo would read and write
    another application's database.

    Args:
        url: A `redis://`, `rediss://` or cluster URL (a `unix://` URL's path is the socket).

    Raises:
        ValueError: The path names something other than a database number.
    """
    if url.startswith("unix://"):
        return
    path = unquote(urlsplit(url).path)
    number = path[1:] if path.startswith("/") else path
    if number and not (number.isascii() and number.isdigit()):
        raise ValueError(
            f"the database of a Redis URL is a whole number, as in redis://host:6379/0; "
            f"got {path!r}"
        )
