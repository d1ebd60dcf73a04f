"""The words of the error for a feature whose pip extra is not installed (one wording, one place).

The API (`from turnstore import RedisSession`), the stores and the `turnstore` command all say
it the same way: `RedisSession needs the redis extra: pip install 'turnstore[redis]'`.
"""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(feature: str, extra: str) -> ImportError:
    """Return the error that says which extra `feature` needs and how to install it.

    Args:
        feature: What the user asked for, as they would name it (`"RedisSession"`,
            `"a redis:// URL"`).
        extra: The pip extra that brings its packages (`"redis"`, `"postgres"`, `"encryption"`).

    Returns:
        The error to raise (chain the original `ImportError` to it).

    Example:
        ```python
        try:
            import redis
        except ImportError as exc:
            raise missing_extra("RedisSession", "redis") from exc
        ```
    """
    return ImportError(f"{feature} needs the {extra} extra: pip install 'turnstore[{extra}]'")
