"""OpenAIConversationsSession: a history kept on the server by the OpenAI Conversations API."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import openai
from openai import AsyncOpenAI

from ...exceptions import SessionStorageError
from ..codec import check_limit, encode_items
from ..mutation import await_session_mutation
from ..session import SessionABC
from ..settings import (
    SessionSettings,
    SessionSettingsLike,
    default_session_settings,
    resolve_session_limit,
)
from .client import OpenAIClientSession, OwnedOpenAIClient

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = ["OpenAIConversationsSession"]

logger = logging.getLogger(__name__)

MAX_ITEMS_PER_REQUEST = 20
"""The most items one create request may carry (the API reference of
`POST /v1/conversations/{id}/items` and `POST /v1/conversations`: "up to 20 items at a time")."""

_MAX_PAGE_SIZE = 100
"""The largest page `GET /v1/conversations/{id}/items` returns (`limit` ranges from 1 to 100)."""


def _item_to_dict(item: Any) -> TResponseInputItem:
    if isinstance(item, Mapping):
        return cast("TResponseInputItem", dict(item))
    # Items arrive as the client's pydantic models; only the fields the API sent are kept.
    # `warnings=False`: the API may send values newer than the client's literal types.
    return cast("TResponseInputItem", item.model_dump(exclude_unset=True, warnings=False))


class OpenAIConversationsSession(SessionABC, OpenAIClientSession):
    """A session whose history lives in an OpenAI conversation, on the server.

    Nothing is stored locally: every method calls the
    [Conversations API](https://platform.openai.com/docs/api-reference/conversations). The
    conversation is created on the first write (or pass the id of an existing one), so
    constructing the session makes no request.

    Reads fetch only what they return: `get_items(limit)` pages backwards from the newest item
    and stops after `limit` items. Writes are sent in requests of at most 20 items, the most the
    API accepts. A batch is stored whole or not at all: when one request of a larger batch
    fails, the items the earlier requests created are deleted again. A write runs to its end
    even when its caller is cancelled (see
    [`await_session_mutation`][turnstore.memory.await_session_mutation]).
    Calls through one session object are serialised; separate objects or processes writing to
    the same conversation need their own coordination.

    This session cannot be wrapped by
    [`OpenAIResponsesCompactionSession`][turnstore.OpenAIResponsesCompactionSession]: the
    server owns the history, so there is nothing local to replace.

    !!! warning "One event loop per session"
        The session belongs to the event loop it is first used on, and so does its
        `AsyncOpenAI` client, built from the environment or passed in. Another loop raises
        [`UserError`][turnstore.UserError]. Each `Runner.run_sync()` or `asyncio.run()` call
        starts a new loop, so create the session inside the loop that uses it.

    Args:
        conversation_id: The id of an existing conversation (`"conv_..."`). `None` creates a new
            conversation on the first `add_items`.
        client: The `AsyncOpenAI` client to use. `None` builds one from the environment
            (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) on first use.
        session_settings: Default settings for runs that use this session, as a
            [`SessionSettings`][turnstore.SessionSettings] or a dict.
        openai_client: The OpenAI Agents SDK's name for `client`; give one or the other.

    Raises:
        ValueError: `conversation_id` is an empty string.
        TypeError: Both `client` and `openai_client` are given.

    Example:
        ```python
        from turnstore import Agent, OpenAIConversationsSession, Runner

        session = OpenAIConversationsSession()
        await Runner.run(agent, "My name is Ada.", session=session)
        print(session.conversation_id)  # "conv_...": reopen it later with conversation_id=
        ```
    """

    _kind = "OpenAIConversationsSession"

    def __init__(
        self,
        *,
        conversation_id: str | None = None,
        client: AsyncOpenAI | None = None,
        session_settings: SessionSettingsLike | None = None,
        openai_client: AsyncOpenAI | None = None,
    ) -> None:
        if openai_client is not None:
            if client is not None:
                raise TypeError("pass the client as client= or openai_client=, not both")
            client = openai_client
        if conversation_id is not None and (
            not isinstance(conversation_id, str) or not conversation_id
        ):
            raise ValueError(
                f"conversation_id must be a non-empty string or None, got {conversation_id!r}"
            )
        self._conversation_id = conversation_id
        self._client = OwnedOpenAIClient(client, what="OpenAIConversationsSession")
        self.session_settings: SessionSettings | None = default_session_settings(session_settings)
        self._lock = asyncio.Lock()

    # -- identity --------------------------------------------------------------------------

    @property
    def session_id(self) -> str:  # type: ignore[override]
        """The conversation id, or `""` while no conversation exists yet.

        A new session has no conversation until its first `add_items` (or
        [`ensure_conversation`][turnstore.OpenAIConversationsSession.ensure_conversation]).
        """
        return self._conversation_id or ""

    @property
    def conversation_id(self) -> str | None:
        """The conversation id, or `None` while no conversation exists yet."""
        return self._conversation_id

    async def ensure_conversation(self) -> str:
        """Create the conversation now, if it does not exist yet, and return its id.

        Returns:
            The conversation id.

        Raises:
            SessionStorageError: The API call failed.
        """
        self._check_open()
        async with self._lock:
            if self._conversation_id is None:
                await await_session_mutation(self._create_conversation([]))
            assert self._conversation_id is not None
            return self._conversation_id

    async def _create_conversation(self, items: list[TResponseInputItem]) -> str:
        client = await self._get_client()
        try:
            conversation = await client.conversations.create(items=items)
        except openai.OpenAIError as exc:
            raise SessionStorageError(f"creating the conversation failed: {exc}") from exc
        self._conversation_id = conversation.id
        return conversation.id

    # -- reads -----------------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the conversation's items, oldest first.

        With a limit, only the latest `limit` items are read, newest first, at most 100 per
        request. The cost grows with `limit`, not with the length of the history.

        Args:
            limit: Return only the latest `limit` items (still oldest first). `None` uses the
                session settings' limit, or returns everything.

        Returns:
            The items as plain dicts (with the ids the server gave them), oldest first. `[]`
            when no conversation exists yet.

        Raises:
            TypeError: `limit` is not an int or None.
            ValueError: `limit` is negative.
            SessionStorageError: The API call failed.
        """
        self._check_open()
        resolved = check_limit(resolve_session_limit(limit, self.session_settings))
        if resolved == 0 or self._conversation_id is None:
            return []
        return await self._read(self._conversation_id, resolved)

    async def _read(self, conversation_id: str, limit: int | None) -> list[TResponseInputItem]:
        client = await self._get_client()
        items: list[TResponseInputItem] = []
        try:
            # With a limit, newest first: the reading stops after `limit` items.
            pages = client.conversations.items.list(
                conversation_id,
                order="asc" if limit is None else "desc",
                limit=_MAX_PAGE_SIZE if limit is None else min(limit, _MAX_PAGE_SIZE),
            )
            async for item in pages:
                items.append(_item_to_dict(item))
                if limit is not None and len(items) >= limit:
                    break
        except openai.OpenAIError as exc:
            raise SessionStorageError(
                f"reading conversation {conversation_id!r} failed: {exc}"
            ) from exc
        if limit is not None:
            items.reverse()
        return items

    # -- writes ----------------------------------------------------------------------------

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the conversation, all of them or none.

        The batch is sent in requests of at most 20 items. A new conversation is created with
        the first 20 items in the same request. When a later request fails, the items the earlier
        requests created are deleted again (or the conversation this call created is deleted)
        before the error is raised.

        Args:
            items: The items to append, in order. An empty list sends nothing.

        Raises:
            TypeError: An item is not a JSON-serialisable mapping (the message names its index);
                nothing was sent.
            SessionStorageError: An API call failed; the items of this call that had been
                created were removed again.
        """
        self._check_open()
        encode_items(items)  # validates every item before anything is sent
        if not items:
            return
        batch = [cast("TResponseInputItem", dict(item)) for item in items]
        async with self._lock:
            await await_session_mutation(self._write(batch))

    async def _write(self, items: list[TResponseInputItem]) -> None:
        client = await self._get_client()
        chunks = [
            items[start : start + MAX_ITEMS_PER_REQUEST]
            for start in range(0, len(items), MAX_ITEMS_PER_REQUEST)
        ]
        created_conversation: str | None = None
        created_item_ids: list[str] = []
        conversation_id = self._conversation_id
        try:
            if conversation_id is None:
                conversation_id = created_conversation = await self._create_conversation(
                    chunks.pop(0)
                )
            for chunk in chunks:
                result = await client.conversations.items.create(conversation_id, items=chunk)
                created_item_ids.extend(item.id for item in result.data if item.id)
        except BaseException as exc:
            await self._undo_write(conversation_id, created_conversation, created_item_ids, exc)
            if isinstance(exc, openai.OpenAIError):
                raise SessionStorageError(
                    f"adding {len(items)} items to conversation {conversation_id!r} failed "
                    f"(nothing of the batch was kept): {exc}"
                ) from exc
            raise

    async def _undo_write(
        self,
        conversation_id: str | None,
        created_conversation: str | None,
        created_item_ids: list[str],
        cause: BaseException,
    ) -> None:
        if conversation_id is None:
            return
        client = await self._get_client()
        try:
            if created_conversation is not None:
                await client.conversations.delete(created_conversation)
                if self._conversation_id == created_conversation:
                    self._conversation_id = None
            else:
                for item_id in reversed(created_item_ids):
                    await client.conversations.items.delete(
                        item_id, conversation_id=conversation_id
                    )
        except openai.OpenAIError as undo_exc:
            raise SessionStorageError(
                f"adding items to conversation {conversation_id!r} failed ({cause!r}) and "
                f"removing the {len(created_item_ids)} items already created failed too: "
                f"{undo_exc}"
            ) from undo_exc

    async def pop_item(self) -> TResponseInputItem | None:
        """Delete the newest item of the conversation and return it.

        Returns:
            The removed item, or `None` when the conversation is empty or does not exist yet.

        Raises:
            SessionStorageError: An API call failed.
        """
        self._check_open()
        async with self._lock:
            conversation_id = self._conversation_id
            if conversation_id is None:
                return None
            newest = await self._read(conversation_id, 1)
            if not newest:
                return None
            item = newest[0]
            item_id = cast(Mapping[str, Any], item).get("id")
            if not isinstance(item_id, str) or not item_id:
                raise SessionStorageError(
                    f"the newest item of conversation {conversation_id!r} has no id to delete"
                )
            await self._delete(
                lambda client: client.conversations.items.delete(
                    item_id, conversation_id=conversation_id
                ),
                f"deleting item {item_id!r} of conversation {conversation_id!r}",
            )
            return item

    async def clear_session(self) -> None:
        """Delete the conversation on the server.

        The session forgets the conversation id; the next `add_items` creates a new
        conversation. A conversation that is already gone counts as cleared.

        Raises:
            SessionStorageError: The API call failed.
        """
        self._check_open()
        async with self._lock:
            conversation_id = self._conversation_id
            if conversation_id is None:
                return
            if not await self._delete(
                lambda client: client.conversations.delete(conversation_id),
                f"deleting conversation {conversation_id!r}",
                gone_ok=True,
            ):
                logger.debug("conversation %s was already deleted", conversation_id)
            self._conversation_id = None

    async def _delete(
        self, call: Callable[[AsyncOpenAI], Awaitable[object]], what: str, *, gone_ok: bool = False
    ) -> bool:
        """Make one delete call, run to its end even when the caller is cancelled.

        Returns:
            `False` when the server no longer has what `call` deletes and `gone_ok` is true.

        Raises:
            SessionStorageError: The call failed (`what` says what it was doing).
        """
        client = await self._get_client()
        try:
            await await_session_mutation(call(client))
        except openai.OpenAIError as exc:
            if gone_ok and isinstance(exc, openai.NotFoundError):
                return False
            raise SessionStorageError(f"{what} failed: {exc}") from exc
        return True
