"""Where and how `RedisSession` keeps its data: key layouts (one server, cluster), elements.

For a key prefix `P` (default `agent_sessions`):

- **One Redis** (`redis.asyncio.Redis`), the layout of every release so far:
  `P:items:<session_id>` (the item list) and one sorted set `P:index` of all sessions.
- **Redis Cluster** (`redis.asyncio.cluster.RedisCluster`): a script may only touch keys of one
  hash slot, so the session id is the list's hash tag, `P:items:{<session_id>}`, and each hash
  slot has its own index, `P:index:{<tag>}`, where `<tag>` is a short string chosen so that the
  index lives in the slot of the sessions it lists. A write touches one slot; listing reads
  the indexes of every slot, on every primary. A hash tag ends at the first `}`, so an id that
  contains `}` is not used as one (`a}b` would share the slot of every `a}...` id): its list is
  `P:items:{<digest>}<session_id>`, tagged with 16 hex digits of the whole id's BLAKE2b hash.

The two layouts are separate key spaces: moving sessions from a single server to a cluster goes
through `turnstore export` and `turnstore import`.

Each element of an item list is `<milliseconds since the epoch>|<item JSON>`
([`encode_element`][turnstore.memory.redis.keys.encode_element]), so each item records when it
was added; the stamp is signed (an item imported with a `created_at` before 1970 has a negative
one).
"""

from __future__ import annotations

import json
import re
from binascii import crc_hqx
from functools import cache
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from redis.asyncio.cluster import RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from ..codec import decode_item

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "ClusterLayout",
    "KeyLayout",
    "SingleNodeLayout",
    "decode_element",
    "decode_elements",
    "encode_element",
    "layout_for",
    "slot_tag",
    "split_stamp",
]

DEFAULT_KEY_PREFIX = "agent_sessions"
"""The default key prefix, that of every turnstore release.

The OpenAI Agents SDK's `RedisSession` uses other keys (`agents:session:<session_id>:messages`,
a list of item JSON), so neither reads what the other stored: docs/from_agents_sdk.md has a
script that copies the SDK's sessions.
"""


class KeyLayout:
    """The keys of the sessions under one prefix.

    Attributes:
        prefix: The key prefix.
        cluster: True for the Redis Cluster layout.
    """

    cluster = False

    def __init__(self, prefix: str) -> None:
        if not isinstance(prefix, str) or not prefix:
            raise ValueError(f"key_prefix must be a non-empty string, got {prefix!r}")
        self.prefix = prefix

    def items_key(self, session_id: str) -> str:
        """Return the key of a session's item list."""
        return f"{self.prefix}:items:{session_id}"

    def index_key(self, session_id: str) -> str:
        """Return the key of the sorted set that lists this session."""
        return f"{self.prefix}:index"

    async def index_keys(self, client: Any) -> list[str]:
        """Return the index keys that list sessions under this prefix.

        Args:
            client: The client of the layout.
        """
        return [f"{self.prefix}:index"]


class SingleNodeLayout(KeyLayout):
    """One Redis: `P:items:<session_id>` and one index, `P:index`."""


class ClusterLayout(KeyLayout):
    """Redis Cluster: `P:items:{<session_id>}` and one index per hash slot, `P:index:{<tag>}`.

    Raises:
        ValueError: The prefix holds `{` or `}`: a hash tag in the prefix would put every
            session in one slot, or split a session's keys over two.
    """

    cluster = True

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        if "{" in prefix or "}" in prefix:
            raise ValueError(
                f"on a Redis Cluster, key_prefix must not contain '{{' or '}}' (they make a "
                f"hash tag), got {prefix!r}"
            )

    def items_key(self, session_id: str) -> str:
        """Return `P:items:{<session_id>}`: the id is the hash tag.

        An id that contains `}` cannot be a hash tag (the tag would end there): its key is
        `P:items:{<digest>}<session_id>`, whose tag is a digest of the whole id. No other id has
        that key: a plain id's key ends at its only `}`.
        """
        if "}" not in session_id:
            return f"{self.prefix}:items:{{{session_id}}}"
        digest = blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return f"{self.prefix}:items:{{{digest}}}{session_id}"

    def index_key(self, session_id: str) -> str:
        """Return the index of the slot that holds the session's list."""
        return self._index_of_slot(key_slot(self.items_key(session_id).encode()))

    async def index_keys(self, client: Any) -> list[str]:
        """Return the indexes that exist, found with `SCAN` on every primary.

        Args:
            client: The `RedisCluster` client.
        """
        pattern = f"{_glob_escape(self.prefix)}:index:{{*}}"
        found: set[str] = set()
        async for raw in client.scan_iter(match=pattern, count=1000, _type="zset"):
            key = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
            if key == self._index_of_slot(key_slot(key.encode("utf-8", "surrogateescape"))):
                found.add(key)  # ours: not another prefix's keys that match the pattern
        return sorted(found)

    def _index_of_slot(self, slot: int) -> str:
        return f"{self.prefix}:index:{{{slot_tag(slot)}}}"


def layout_for(client: Any, prefix: str) -> KeyLayout:
    """Return the layout for a client: the cluster layout for a `RedisCluster`.

    Args:
        client: A `redis.asyncio.Redis` or `redis.asyncio.cluster.RedisCluster`.
        prefix: The key prefix.

    Returns:
        The layout.
    """
    return ClusterLayout(prefix) if isinstance(client, RedisCluster) else SingleNodeLayout(prefix)


def _glob_escape(text: str) -> str:
    """Escape the characters that `SCAN MATCH` patterns give a meaning."""
    return "".join(f"\\{char}" if char in "*?[]\\" else char for char in text)


# Redis Cluster hashes a key with CRC16 (XMODEM: polynomial 0x1021, initial value 0), keeping
# the low 14 bits. That CRC is linear for messages of one length: crc(a ^ b) == crc(a) ^ crc(b).
# A tag of four characters from '@ABCDEFGHIJKLMNO' (0x40-0x4F) varies 16 bits, and a basis of
# their contributions reaches any slot: the tag for a slot is solved, not searched for.
_TAG_BASE = b"@@@@"
_SLOT_MASK = REDIS_CLUSTER_HASH_SLOTS - 1


@cache
def _tag_basis() -> tuple[tuple[int, int, int], ...]:
    """(pivot bit, slot-bit contribution, tag-bit combination), highest pivot first."""
    basis: dict[int, tuple[int, int]] = {}
    for bit in range(8 * len(_TAG_BASE)):
        if bit % 8 >= 4:
            continue  # only the low four bits of each character vary
        flipped = bytearray(len(_TAG_BASE))
        flipped[bit // 8] = 1 << (bit % 8)
        vector, combo = crc_hqx(bytes(flipped), 0) & _SLOT_MASK, 1 << bit
        while vector:
            pivot = vector.bit_length() - 1
            if pivot not in basis:
                basis[pivot] = (vector, combo)
                break
            vector ^= basis[pivot][0]
            combo ^= basis[pivot][1]
    return tuple((pivot, *basis[pivot]) for pivot in sorted(basis, reverse=True))


@cache
def slot_tag(slot: int) -> str:
    """Return a short hash tag whose key slot is `slot`.

    Args:
        slot: A hash slot, 0-16383.

    Returns:
        Four characters from `@ABCDEFGHIJKLMNO`.
    """
    target = (slot ^ crc_hqx(_TAG_BASE, 0)) & _SLOT_MASK
    combo = 0
    for pivot, vector, bits in _tag_basis():
        if target >> pivot & 1:
            target ^= vector
            combo ^= bits
    if target:  # pragma: no cover - the basis spans every slot (a test checks all of them)
        raise AssertionError(f"no tag for slot {slot}")
    tag = bytes(_TAG_BASE[i] ^ (combo >> (8 * i) & 0xFF) for i in range(len(_TAG_BASE)))
    return tag.decode("ascii")


# --- list elements ----------------------------------------------------------------------------

_STAMP = re.compile(r"-?[0-9]{1,19}")

_STAMP_DIGITS = 24
"""Where the `|` after a stamp must be found, at the latest (a fast-path bound)."""


def encode_element(stamp_ms: int | str, text: str) -> str:
    """Return the list element that stores one encoded item and the time it was added.

    Args:
        stamp_ms: Milliseconds since the epoch (negative before 1970).
        text: The item, encoded by `codec.encode_items`.

    Returns:
        `<stamp_ms>|<text>`.
    """
    return f"{stamp_ms}|{text}"


def split_stamp(text: str) -> tuple[int | None, str]:
    """Split `"<milliseconds>|<json>"` into the stamp and the JSON text.

    The stamp is a signed integer: an item imported with a `created_at` before 1970 has a
    negative one.

    Args:
        text: The stored element, as text.

    Returns:
        `(milliseconds, body)`, or `(None, text)` when the element has no valid stamp.
    """
    stamp, bar, body = text.partition("|")
    if not bar or not _STAMP.fullmatch(stamp):
        return None, text
    return int(stamp), body


def decode_element(raw: bytes | str, *, where: str) -> tuple[int | None, TResponseInputItem | None]:
    """Split a stored list element into its timestamp and item.

    Args:
        raw: The element as stored.
        where: Names the element in the warning logged when it is corrupt.

    Returns:
        `(milliseconds, item)`; the item is `None` (with a logged warning) when corrupt.
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    stamp, body = split_stamp(text)
    if stamp is None:
        return None, decode_item(text, where=where)  # logs the problem
    return stamp, decode_item(body, where=where)


_raw_decode = json.JSONDecoder().raw_decode


def decode_elements(raw: list[bytes | str], where: str) -> list[TResponseInputItem]:
    """Decode elements to items, skipping corrupt ones (the hot path of `get_items`).

    Args:
        raw: The stored elements, oldest first.
        where: Names the session in warnings, for example `"session 'a'"`.

    Returns:
        The valid items, in order.
    """
    items: list[TResponseInputItem] = []
    for element in raw:
        try:
            text = element.decode() if isinstance(element, bytes) else element
            bar = text.find("|", 0, _STAMP_DIGITS)
            # Parse the JSON in place, after the timestamp, without copying the body.
            value, end = _raw_decode(text, bar + 1)
            if bar > 0 and end == len(text) and type(value) is dict:
                items.append(value)  # type: ignore[arg-type]
                continue
        except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError: ValueError
            pass
        decode_element(element, where=f"an element of {where}")  # logs why it is corrupt
    return items
