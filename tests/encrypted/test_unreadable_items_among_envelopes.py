"""EncryptedSession among items it cannot read: plaintext between its envelopes, envelopes of
an unknown key, on every backend (SQLite, PostgreSQL, PgBouncer, Redis, the Redis Cluster)."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.fernet import Fernet

from support.backend_matrix import Backend, backend_fixture  # noqa: F401
from turnstore import SessionDecryptionError
from turnstore.extensions.memory import EncryptedSession

KEY = Fernet.generate_key().decode()
OLD = Fernet.generate_key().decode()
ALIEN = Fernet.generate_key().decode()


def msg(t: str) -> dict[str, Any]:
    return {"role": "user", "content": t}


async def test_pop_item_takes_each_readable_item_from_between_plaintext_items(
    backend: Backend,
) -> None:
    raw = backend.session()
    sid = raw.session_id
    enc = EncryptedSession(sid, backend.session(sid), KEY)
    await enc.add_items([msg("a")])
    await raw.add_items([msg("p1")])
    await enc.add_items([msg("b")])
    await raw.add_items([msg("p2")])
    await enc.add_items([msg("c")])
    assert await enc.pop_item() == msg("c")
    assert await enc.pop_item() == msg("b")
    stored = await raw.get_items()
    assert [s for s in stored if "__enc__" not in s] == [msg("p1"), msg("p2")]
    assert len(stored) == 3
    assert await enc.get_items() == [msg("a")]
    assert await enc.pop_item() == msg("a")
    assert await raw.get_items() == [msg("p1"), msg("p2")]


async def test_an_unknown_key_envelope_among_plaintext_stops_rotate_and_pop_and_keeps_all(
    backend: Backend,
) -> None:
    raw = backend.session()
    sid = raw.session_id
    await EncryptedSession(sid, backend.session(sid), ALIEN, ttl=None).add_items([msg("alien")])
    await raw.add_items([msg("p1")])
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([msg("old")])
    before = await raw.get_items()
    both = EncryptedSession(sid, backend.session(sid), [KEY, OLD], ttl=600)
    await both.add_items([msg("new")])  # the sweep meets the alien envelope: nothing deleted
    after = await raw.get_items()
    assert after[:3] == before
    assert len(after) == 4
    with pytest.raises(SessionDecryptionError):
        await both.rotate()
    assert await raw.get_items() == after
    with pytest.raises(SessionDecryptionError):
        await both.get_items()
    assert await both.pop_item() == msg("new")
    assert await both.pop_item() == msg("old")
    # the newest is now plaintext p1, below it the alien: raises, removes nothing
    with pytest.raises(SessionDecryptionError):
        await both.pop_item()
    assert len(await raw.get_items()) == 2


async def test_rotate_keeps_each_plaintext_item_in_its_place(backend: Backend) -> None:
    raw = backend.session()
    sid = raw.session_id
    await raw.add_items([msg("p0")])
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([msg("a")])
    await raw.add_items([msg("p1")])
    await EncryptedSession(sid, backend.session(sid), OLD, ttl=None).add_items([msg("b")])
    await raw.add_items([msg("p2")])
    enc = EncryptedSession(sid, backend.session(sid), [KEY, OLD], ttl=None)
    assert await enc.rotate() == 2
    stored = await raw.get_items()
    assert [stored[0], stored[2], stored[4]] == [msg("p0"), msg("p1"), msg("p2")]
    assert await EncryptedSession(sid, backend.session(sid), KEY).get_items() == [
        msg("a"),
        msg("b"),
    ]
