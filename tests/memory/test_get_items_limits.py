"""Outsider attacks on limits: 0, negative, bool, float, huge, through sessions and wrappers."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from turnstore import EncryptedSession, OpenAIResponsesCompactionSession

ITEMS = [{"role": "user", "content": f"m{n}"} for n in range(5)]
KEY = Fernet.generate_key().decode()


def wrapped(backend: Backend, kind: str) -> Any:
    store = backend.session()
    if kind == "plain":
        return store
    if kind == "encrypted":
        return EncryptedSession(store.session_id, store, KEY, ttl=None)
    return OpenAIResponsesCompactionSession(store.session_id, store, model="gpt-4.1")


KINDS = ["plain", "encrypted", "compaction"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("limit", "expected"),
    [(0, []), (1, ITEMS[-1:]), (5, ITEMS), (2**63 - 1, ITEMS), (2**64, ITEMS), (10**40, ITEMS)],
    ids=["zero", "one", "exact", "int64-max", "2**64", "10**40"],
)
async def test_good_limits(backend: Backend, kind: str, limit: int, expected: Any) -> None:
    session = wrapped(backend, kind)
    await session.add_items(ITEMS)
    assert await session.get_items(limit) == expected
    assert await session.get_items(limit=limit) == expected


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("limit", "error"),
    [
        (-1, ValueError),
        (-(2**70), ValueError),
        (True, TypeError),
        (False, TypeError),
        (2.0, TypeError),
        ("3", TypeError),
    ],
    ids=["minus-one", "huge-negative", "true", "false", "float", "str"],
)
async def test_bad_limits_raise_and_do_not_read_as_empty(
    backend: Backend, kind: str, limit: Any, error: type[Exception]
) -> None:
    session = wrapped(backend, kind)
    await session.add_items(ITEMS)
    with pytest.raises(error):
        await session.get_items(limit)
    assert await session.get_items() == ITEMS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("limit", [0, 2, 2**64])
async def test_settings_limit_is_applied_and_explicit_limit_wins(
    backend: Backend, kind: str, limit: int
) -> None:
    session = wrapped(backend, kind)
    session.session_settings = type(session.session_settings)(limit=limit)
    await session.add_items(ITEMS)
    assert await session.get_items() == (ITEMS[-limit:] if limit else [])
    assert await session.get_items(5) == ITEMS
