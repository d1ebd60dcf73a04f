"""`get_items` limits beyond the shared contract, on every backend and through the encrypted and
compaction wrappers: limits past 64 bits read everything, and a huge negative, bool, float or
str limit raises instead of reading as empty. (Limits 0, 1, N and -1, and a settings limit an
explicit one overrides, are the conformance suite's `test_limit_semantics` and
`test_settings_limit_applies_when_no_limit_is_given`.)"""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from support.backend_matrix import Backend, backend_fixture  # noqa: F401  (the fixture)
from turnstore import OpenAIResponsesCompactionSession
from turnstore.extensions.memory import EncryptedSession

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
    [(2**63 - 1, ITEMS), (2**64, ITEMS), (10**40, ITEMS)],
    ids=["int64-max", "2**64", "10**40"],
)
async def test_limits_beyond_any_history_read_everything(
    backend: Backend, kind: str, limit: int, expected: Any
) -> None:
    session = wrapped(backend, kind)
    await session.add_items(ITEMS)
    assert await session.get_items(limit) == expected
    assert await session.get_items(limit=limit) == expected


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("limit", "error"),
    [
        (-(2**70), ValueError),
        (True, TypeError),
        (False, TypeError),
        (2.0, TypeError),
        ("3", TypeError),
    ],
    ids=["huge-negative", "true", "false", "float", "str"],
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
async def test_a_settings_limit_beyond_64_bits_reads_everything(
    backend: Backend, kind: str
) -> None:
    session = wrapped(backend, kind)
    session.session_settings = type(session.session_settings)(limit=2**64)
    await session.add_items(ITEMS)
    assert await session.get_items() == ITEMS
    assert await session.get_items(2) == ITEMS[-2:]  # an explicit limit wins


@pytest.mark.parametrize("kind", KINDS)
async def test_no_number_means_the_settings_limit_and_a_number_reads_more(
    backend: Backend, kind: str
) -> None:
    """sessions.md, Memory operations: `get_items()` and `get_items(limit=None)` apply
    `session_settings.limit`; passing a number reads more."""
    session = wrapped(backend, kind)
    session.session_settings = type(session.session_settings)(limit=2)
    await session.add_items(ITEMS)
    assert await session.get_items() == ITEMS[-2:]
    assert await session.get_items(limit=None) == ITEMS[-2:]
    assert await session.get_items(limit=len(ITEMS)) == ITEMS
