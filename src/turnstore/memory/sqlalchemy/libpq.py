"""The libpq parameters of a PostgreSQL URL, handed to asyncpg the way it reads them.

Hosted PostgreSQL providers give out libpq URLs such as
`postgresql://user:secret@db.example.com/app?sslmode=require`. SQLAlchemy passes a URL's query
parameters to the driver's `connect()` as keywords, and asyncpg's `connect()` has no `sslmode`,
`sslrootcert`, ... keywords (`connect() got an unexpected keyword argument 'sslmode'`). asyncpg
reads those parameters from a libpq connection URI, its `dsn` argument, with libpq's meaning
(all six `sslmode` values, `require` verifying the server when a root certificate is given,
unknown names sent to the server as settings: `application_name`, `options`).

[`split_libpq_params`][turnstore.memory.sqlalchemy.libpq.split_libpq_params] is the one place
that translates them: it takes them out of the URL and returns the `connect_args` that give
them to asyncpg, refusing up front a value or a parameter asyncpg cannot honour.
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.engine import URL

__all__ = ["SSLMODES", "SUPPORTED", "split_libpq_params"]

SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
"""The values of `sslmode`, as libpq defines them."""

_TARGET_SESSION_ATTRS = ("any", "primary", "standby", "prefer-standby", "read-write", "read-only")

_VIA_DSN = (
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcrl",
    "sslnegotiation",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "application_name",
    "options",
    "target_session_attrs",
    "passfile",
    "service",
    "krbsrvname",
    "gsslib",
)
"""libpq parameters that asyncpg reads from a connection URI with libpq's meaning."""

SUPPORTED = (*_VIA_DSN, "connect_timeout")
"""Every libpq parameter a `postgresql://` URL may carry with the asyncpg driver."""

_NOT_HONOURED = frozenset(
    {
        "channel_binding",
        "client_encoding",
        "fallback_application_name",
        "gssdelegation",
        "gssencmode",
        "hostaddr",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "load_balance_hosts",
        "replication",
        "require_auth",
        "requirepeer",
        "requiressl",
        "sslcertmode",
        "sslcompression",
        "sslcrldir",
        "sslkeylogfile",
        "sslsni",
        "tcp_user_timeout",
    }
)
"""libpq parameters asyncpg has no equivalent for (it would send them to the server as
settings, which the server refuses or, worse, ignores)."""

_SQLALCHEMY_OWN = frozenset(
    {"host", "prepared_statement_cache_size", "prepared_statement_name_func"}
)
"""Query parameters SQLAlchemy's asyncpg dialect reads itself."""


def split_libpq_params(url: URL) -> tuple[URL, dict[str, Any]]:
    """Take the libpq parameters out of a `postgresql+asyncpg` URL, for asyncpg's `connect()`.

    `sslmode` (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`),
    `sslrootcert`, `sslcert`, `sslkey`, `sslpassword`, `sslcrl`, `application_name`, `options`,
    `target_session_attrs` and the other parameters asyncpg reads from a connection URI go
    to it as one (its `dsn` argument; the URL's host, user and database still win);
    `connect_timeout` becomes asyncpg's `timeout` (`0` waits without limit, as in libpq). Other
    query parameters stay in the URL, for SQLAlchemy to pass to `connect()` as keywords.

    Args:
        url: The parsed URL, with the asyncpg driver.

    Returns:
        The URL without those parameters, and the `connect_args` that carry them (empty when
        the URL has none).

    Raises:
        ValueError: A parameter is given twice, `sslmode`, `target_session_attrs` or
            `connect_timeout` has a value libpq does not define, both `sslmode` and asyncpg's
            own `ssl` are given, or a parameter is one asyncpg cannot honour or does not take
            at all.

    Example:
        ```python
        from sqlalchemy.engine import make_url

        url, connect_args = split_libpq_params(
            make_url("postgresql+asyncpg://app@db.example.com/app?sslmode=require")
        )
        # url: postgresql+asyncpg://app@db.example.com/app
        # connect_args: {"dsn": "postgresql://?sslmode=require"}
        ```
    """
    params: dict[str, str] = {}
    for name, raw in url.query.items():
        if not isinstance(raw, str):
            raise ValueError(
                f"the URL parameter {name} is given {len(raw)} times ({', '.join(raw)}); "
                "give it once"
            )
        params[name] = raw
    _refuse_unknown(params)
    dsn = {name: params[name] for name in _VIA_DSN if name in params}
    connect_args: dict[str, Any] = {}
    mode = dsn.get("sslmode")
    if mode is not None:
        if mode not in SSLMODES:
            raise ValueError(f"sslmode must be one of {', '.join(SSLMODES)}; got {mode!r}")
        if "ssl" in params:
            raise ValueError(
                "the URL gives both sslmode (libpq's) and ssl (asyncpg's): give only sslmode"
            )
    attrs = dsn.get("target_session_attrs")
    if attrs is not None and attrs not in _TARGET_SESSION_ATTRS:
        raise ValueError(
            f"target_session_attrs must be one of {', '.join(_TARGET_SESSION_ATTRS)}; got {attrs!r}"
        )
    if dsn:
        connect_args["dsn"] = "postgresql://?" + urlencode(dsn)
    if "connect_timeout" in params:
        if "timeout" in params:
            raise ValueError(
                "the URL gives both connect_timeout (libpq's) and timeout (asyncpg's): "
                "give only connect_timeout"
            )
        connect_args["timeout"] = _connect_timeout(params["connect_timeout"])
    taken = set(dsn) | {"connect_timeout"}
    if not connect_args:
        return url, connect_args
    return url.difference_update_query(sorted(taken & set(params))), connect_args


def _connect_timeout(text: str) -> float | None:
    try:
        seconds = int(text)
    except ValueError:
        raise ValueError(
            f"connect_timeout must be a whole number of seconds (0 for no limit), got {text!r}"
        ) from None
    return float(seconds) if seconds > 0 else None  # libpq: zero or negative waits forever


def _refuse_unknown(params: dict[str, str]) -> None:
    import asyncpg

    known_to_asyncpg = set(inspect.signature(asyncpg.connect).parameters) - {"dsn", "loop"}
    for name in params:
        if name in SUPPORTED or name in _SQLALCHEMY_OWN or name in known_to_asyncpg:
            continue
        if name in _NOT_HONOURED:
            raise ValueError(
                f"the URL parameter {name} is a libpq parameter that asyncpg, the PostgreSQL "
                "driver turnstore uses, cannot honour: remove it from the URL. Supported: "
                f"{', '.join(SUPPORTED)}"
            )
        raise ValueError(
            f"the URL parameter {name} is neither a libpq parameter asyncpg honours nor an "
            f"asyncpg connect() argument: remove it from the URL. libpq parameters supported: "
            f"{', '.join(SUPPORTED)}"
        )
