"""The session contract: what every session backend provides. No I/O lives here."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal, Protocol, TypeGuard, runtime_checkable

from openai.types.responses import ResponseUsage
from typing_extensions import TypedDict

from ..items import TResponseInputItem
from .settings import SessionSettings

__all__ = [
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "Session",
    "SessionABC",
    "is_openai_responses_compaction_aware_session",
]


@runtime_checkable
class Session(Protocol):
    """The storage-agnostic contract of a conversation history.

    Any object with these attributes and coroutine methods is a session: it can be passed as
    `session=` to [`Runner.run`][turnstore.Runner.run] (and to the OpenAI Agents SDK's own
    `Runner`) without subclassing anything. `isinstance(obj, Session)` checks the shape at run time.

    Attributes:
        session_id: Identifies the conversation inside its storage.
        session_settings: Default settings for runs that use this session, or `None`.
    """

    session_id: str
    session_settings: SessionSettings | None

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items (still oldest first). `None` returns the
                whole history, unless the session's settings set a limit.

        Returns:
            The items in the order they were added.
        """
        ...

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history, all of them or none.

        Args:
            items: The items to append, in order.
        """
        ...

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item.

        Returns:
            The removed item, or `None` when the history is empty.
        """
        ...

    async def clear_session(self) -> None:
        """Remove every item of this session, leaving other sessions untouched."""
        ...


class SessionABC(ABC):
    """An abstract base class with the same contract as [`Session`][turnstore.Session].

    Subclass it when you prefer a base class that checks, at instantiation, that all four methods
    are implemented. Subclasses satisfy the `Session` protocol.

    Attributes:
        session_id: Identifies the conversation inside its storage.
        session_settings: Default settings for runs that use this session, or `None`.
    """

    session_id: str
    session_settings: SessionSettings | None = None

    @abstractmethod
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the stored history, oldest first.

        Args:
            limit: Return only the latest `limit` items. `None` returns the whole history, unless
                the session's settings set a limit.

        Returns:
            The items in the order they were added.
        """

    @abstractmethod
    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the history, all of them or none.

        Args:
            items: The items to append, in order.
        """

    @abstractmethod
    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item.

        Returns:
            The removed item, or `None` when the history is empty.
        """

    @abstractmethod
    async def clear_session(self) -> None:
        """Remove every item of this session, leaving other sessions untouched."""


class OpenAIResponsesCompactionArgs(TypedDict, total=False):
    """Arguments a runner passes to `run_compaction` after it saves a turn.

    Attributes:
        response_id: The id of the latest Responses API response, if known.
        compaction_mode: `"previous_response_id"` compacts the server-side response chain,
            `"input"` sends the stored items, `"auto"` picks one of the two.
        store: Whether the run stored its responses on the server (`store=True`).
        force: Compact even when the session's trigger says it is not yet needed.
    """

    response_id: str
    compaction_mode: Literal["previous_response_id", "input", "auto"]
    store: bool
    force: bool


@runtime_checkable
class OpenAIResponsesCompactionAwareSession(Session, Protocol):
    """A session that can shrink its history with the Responses API's compaction.

    The runner calls `run_compaction` after each saved turn when
    [`is_openai_responses_compaction_aware_session`][turnstore.is_openai_responses_compaction_aware_session]
    returns `True` for the run's session.
    """

    async def run_compaction(
        self, args: OpenAIResponsesCompactionArgs | None = None
    ) -> ResponseUsage | None:
        """Compact the stored history if the session's trigger (or `force`) says so.

        Args:
            args: What the runner knows about the latest response; see
                [`OpenAIResponsesCompactionArgs`][turnstore.OpenAIResponsesCompactionArgs].

        Returns:
            The token usage of the compaction call, which the runner adds to the run's usage, or
            `None` when nothing was compacted.
        """
        ...


def is_openai_responses_compaction_aware_session(
    session: Any,
) -> TypeGuard[OpenAIResponsesCompactionAwareSession]:
    """Tell whether `session` supports `run_compaction`.

    Args:
        session: Any object, `None` included.

    Returns:
        `True` when `session` has a callable `run_compaction`; `False` for `None`, for objects
        without it, and for objects whose attribute lookup raises.
    """
    if session is None:
        return False
    try:
        method = getattr(session, "run_compaction", None)
    except Exception:
        return False
    return callable(method)
