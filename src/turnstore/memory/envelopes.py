"""The envelopes of `EncryptedSession`: one session's keys, and sealing and opening its items.

An item's JSON is encrypted with Fernet (AES-128-CBC with an HMAC-SHA256, and a timestamp) under
a key derived for the session from a master key and the session id with HKDF-SHA256; what is
stored is the envelope `{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": "<token>"}`. Both are
those of the OpenAI Agents SDK's `EncryptedSession`, so either library reads the other's history.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .._extras import missing_extra
from ..exceptions import SessionDecryptionError
from .codec import encode_items

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

__all__ = ["Envelopes", "Opened", "fernet_module", "is_envelope"]

_INFO = b"agents.session-store.hkdf.v1"
KEY_ID = "hkdf-v1"
VERSION = 1


class Opened(NamedTuple):
    """An envelope opened: the item, the token's time (whole seconds), the key that opened it."""

    item: dict[str, Any]
    stamp: int
    key_index: int


def fernet_module() -> Any:
    """`cryptography.fernet`, or the error that names the `encryption` extra."""
    try:
        from cryptography import fernet
    except ImportError as exc:
        raise missing_extra("EncryptedSession", "encryption") from exc
    return fernet


def is_envelope(item: object) -> bool:
    """Whether a stored item is a well-formed envelope (a key may still fail to open it)."""
    return (
        isinstance(item, dict)
        and item.get("__enc__") == 1
        and isinstance(item.get("payload"), str)
        and "kid" in item
        and "v" in item
    )


def claims_envelope(item: object) -> bool:
    """Whether a stored item says it is an envelope (has `__enc__`), valid or not."""
    return isinstance(item, dict) and "__enc__" in item


def master_bytes(key: object, index: int) -> bytes:
    """A Fernet key (url-safe base64 of 32 bytes) gives its 32 bytes; other text its UTF-8."""
    if isinstance(key, bytes):
        key = key.decode("ascii", "strict") if key.isascii() else key
    if isinstance(key, bytes):
        raw: bytes = key
    elif isinstance(key, str):
        if not key:
            raise ValueError(f"encryption key {index} is empty")
        try:
            decoded = base64.urlsafe_b64decode(key)
        except (binascii.Error, ValueError):
            decoded = b""
        raw = decoded if len(decoded) == 32 else key.encode("utf-8")
    else:
        raise TypeError(
            f"encryption key {index} must be a str or bytes (for example "
            f"Fernet.generate_key()), not {type(key).__name__}"
        )
    if not raw:
        raise ValueError(f"encryption key {index} is empty")
    return raw


def session_fernet(master: bytes, session_id: str) -> Fernet:
    """The `Fernet` of the key derived for `session_id` from `master` (HKDF-SHA256)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=session_id.encode("utf-8"), info=_INFO
    ).derive(master)
    fernet: Fernet = fernet_module().Fernet(base64.urlsafe_b64encode(derived))
    return fernet


class Envelopes:
    """Seals and opens the items of one session under its keys; the first key seals.

    Args:
        session_id: Salts the key derivation, and names the session in errors.
        keys: Master keys (str or bytes), at least one.

    Raises:
        ImportError: The `encryption` extra is not installed.
        TypeError: A key is not str or bytes.
        ValueError: No key, or an empty key.
    """

    def __init__(self, session_id: str, keys: str | bytes | Sequence[str | bytes]) -> None:
        self._invalid_token: type[Exception] = fernet_module().InvalidToken
        listed = [keys] if isinstance(keys, str | bytes) else keys
        if not isinstance(listed, Sequence) or not listed:
            raise ValueError("encryption_key must be a key or a non-empty list of keys")
        masters = [master_bytes(key, index) for index, key in enumerate(listed)]
        self.session_id = session_id
        self.fernets = [session_fernet(master, session_id) for master in masters]

    def seal(self, items: list[Any]) -> list[dict[str, Any]]:
        """Validate and encode `items` with the codec every backend uses, then seal each.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping (the message names it).
        """
        return [self._seal(plain) for plain in encode_items(items)]

    def _seal(self, plain: str) -> dict[str, Any]:
        token = self.fernets[0].encrypt(plain.encode("utf-8")).decode("ascii")
        return {"__enc__": 1, "v": VERSION, "kid": KEY_ID, "payload": token}

    def open(self, stored: Any, where: str) -> Opened | None:
        """Authenticate and decrypt one stored item; `None` for plaintext (not an envelope).

        Raises:
            SessionDecryptionError: No key authenticates the envelope, or it is damaged.
        """
        if not is_envelope(stored):
            if claims_envelope(stored):
                raise SessionDecryptionError(
                    f"{where} of encrypted session {self.session_id!r} is a damaged envelope "
                    "(it has `__enc__` but not a version, key id and text payload): it was "
                    "altered in storage. Nothing was changed; remove or restore that item in "
                    "the wrapped session."
                )
            return None
        token = stored["payload"].encode("ascii", "replace")
        for index, fernet in enumerate(self.fernets):
            try:
                plain = fernet.decrypt(token)
                stamp = fernet.extract_timestamp(token)
            except self._invalid_token:
                continue
            item = json.loads(plain)
            if not isinstance(item, dict):
                raise SessionDecryptionError(
                    f"{where} of encrypted session {self.session_id!r} decrypts to a JSON "
                    f"{type(item).__name__}, not an item"
                )
            return Opened(item, stamp, index)
        raise SessionDecryptionError(
            f"{where} of encrypted session {self.session_id!r} cannot be decrypted with "
            f"{'the given key' if len(self.fernets) == 1 else 'any of the given keys'}: a wrong "
            "key, or a history written under another session id. Nothing was changed; pass the "
            "key that wrote it (a list of keys during a rotation)."
        )

    def reseal(self, envelope: dict[str, Any], key_index: int) -> dict[str, Any]:
        """The envelope re-encrypted with the first key, keeping its timestamp."""
        multi = fernet_module().MultiFernet([self.fernets[0], self.fernets[key_index]])
        token = multi.rotate(envelope["payload"].encode("ascii")).decode("ascii")
        return {**envelope, "payload": token}
