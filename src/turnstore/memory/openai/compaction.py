"""OpenAIResponsesCompactionSession: keeps a long history short with `responses.compact`."""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import openai
from openai import AsyncOpenAI
from openai.types.responses import CompactedResponse, ResponseUsage

from ...defaults import default_model_name
from ...exceptions import SessionError, UserError
from ...items import clean_input_item
from ..session import (
    HistorySnapshot,
    OpenAIResponsesCompactionArgs,
    Session,
    WrapperSessionABC,
    is_atomic_replacement_session,
)
from ..settings import resolve_session_limit
from .client import OpenAIClientSession, OwnedOpenAIClient
from .compaction_args import (
    DEFAULT_COMPACTION_THRESHOLD,
    MODES,
    CompactionMode,
    CompactionTrigger,
    CompactionTriggerContext,
    check_args,
    default_trigger,
)
from .compaction_items import (
    compactable_prefix_length,
    ends_with_model_output,
    normalize_compacted_output,
    select_compaction_candidate_items,
)
from .compaction_replace import WHOLE_HISTORY, ReplaceAndRestore, canonical
from .conversations import OpenAIConversationsSession

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = [
    "DEFAULT_COMPACTION_THRESHOLD",
    "CompactionTriggerContext",
    "OpenAIResponsesCompactionSession",
]

logger = logging.getLogger(__name__)


class OpenAIResponsesCompactionSession(ReplaceAndRestore, WrapperSessionABC, OpenAIClientSession):
    """A session wrapper that shortens a long history with the Responses API's compaction.

    Use it when conversations grow long enough to cost too many tokens or to overflow the
    model's context. It wraps another session, which keeps storing the items. After each
    model call the [`Runner`][turnstore.Runner] calls
    [`run_compaction`][turnstore.OpenAIResponsesCompactionSession.run_compaction]. When the
    trigger says so, the session sends the history to `client.responses.compact(...)`. It then
    replaces the stored items with the result: the user messages plus one encrypted
    `compaction` item that stands for everything else.

    !!! warning "With a history limit, compaction removes the older items"
        In the default `"auto"` mode, when responses are stored (the API's default), the
        server compacts only what the latest model call saw. If your runs load only part of
        the history (`SessionSettings(limit=...)`, `limit_turns`, `limit_tokens`, or a
        `session_input_callback`), the stored items older than that window leave the
        history. A SQLite session moves them to its archive; every other session deletes
        them. Pass `compaction_mode="input"` to compact everything stored.

    !!! warning "One event loop per session"
        The session's `AsyncOpenAI` client, built from the environment or passed in, belongs
        to the event loop it is first used on: that of the first compaction. From then on,
        another loop raises [`UserError`][turnstore.UserError] as a run starts, before
        anything is stored. Each `Runner.run_sync()` or `asyncio.run()` call starts a new
        loop, so create the session inside the loop that uses it, even over a `SQLiteSession`.

    What a compaction guarantees:

    - All or nothing. On a session with an atomic replacement, the replacement is one
      transaction: [`SQLiteSession`][turnstore.SQLiteSession],
      [`AdvancedSQLiteSession`][turnstore.extensions.memory.AdvancedSQLiteSession],
      [`SQLAlchemySession`][turnstore.extensions.memory.SQLAlchemySession],
      [`RedisSession`][turnstore.extensions.memory.RedisSession], and
      [`EncryptedSession`][turnstore.extensions.memory.EncryptedSession] over one of them.
      `SQLiteSession` keeps the replaced items in its archive. On any other session, the
      previous history is written back when the replacement fails or is cancelled.
    - Items added while the compaction call is in flight are kept, after the compacted items.
    - A tool call is never separated from its output. A call still waiting for its output is
      never compacted away: only the history before it is compacted.

    Write through this object, not the wrapped session, while it is in use. Its `close()`
    closes the client it built, not the wrapped session: close both, as the example does.

    Args:
        session_id: Identifies this session (usually the wrapped session's id).
        underlying_session: The session that stores the items. Not an
            [`OpenAIConversationsSession`][turnstore.OpenAIConversationsSession], whose
            history the server owns.
        client: The `AsyncOpenAI` client for `responses.compact`. `None` builds one from the
            environment on first use.
        model: The model that compacts; best the model the conversation runs on. `None` uses
            `$OPENAI_DEFAULT_MODEL`, else `"gpt-5.6-luna"`.
        compaction_mode: How the history reaches the compaction endpoint.
            `"previous_response_id"` compacts the server's chain of the latest response (it
            needs a response id). `"input"` sends the stored items. `"auto"`, the default,
            uses the response id when the latest response was stored, else sends the items.
        should_trigger_compaction: Decides whether to compact. It receives a
            [`CompactionTriggerContext`][turnstore.CompactionTriggerContext] and returns a
            bool, or an awaitable of one. The default compacts once at least 10 candidate
            items (neither user messages nor compaction items) are stored.

    Raises:
        UserError: `underlying_session` is an `OpenAIConversationsSession`, another
            `OpenAIResponsesCompactionSession`, or not a session.
        ValueError: `compaction_mode` or `model` is invalid.
        TypeError: `should_trigger_compaction` is not callable.

    Example:
        ```python
        from turnstore import OpenAIResponsesCompactionSession, Runner, SQLiteSession

        async with (
            SQLiteSession("user_42", "chats.db") as wrapped,
            OpenAIResponsesCompactionSession("user_42", wrapped, model="gpt-4.1") as session,
        ):
            result = await Runner.run(agent, "Hello", session=session)  # compacts when due
            usage = await session.run_compaction({"force": True})  # or compact now
        ```
    """

    # Atomic replacement: on a session with `snapshot_history`/`replace_history` it is one
    # transaction; on any other the previous history is restored when the replacement fails
    # or is cancelled, and the result is read back and checked. This object's own writes wait
    # (`_mutation_lock`) while a replacement is in progress. The trigger is asked about the
    # history as written through this object (`_known`), so deciding reads nothing; the stored
    # history is read only when a compaction is due (and once, unless the run's own whole-
    # history `get_items()` already returned it).

    _kind = "OpenAIResponsesCompactionSession"

    def __init__(
        self,
        session_id: str,
        underlying_session: Session,
        *,
        client: AsyncOpenAI | None = None,
        model: str | None = None,
        compaction_mode: CompactionMode = "auto",
        should_trigger_compaction: CompactionTrigger | None = None,
    ) -> None:
        if isinstance(underlying_session, OpenAIConversationsSession):
            raise UserError(
                "OpenAIResponsesCompactionSession cannot wrap an OpenAIConversationsSession: the "
                "Conversations API keeps that history on the server, so there is no stored "
                "history to replace. Use a local session (for example SQLiteSession) instead."
            )
        if isinstance(underlying_session, OpenAIResponsesCompactionSession):
            raise UserError("an OpenAIResponsesCompactionSession cannot wrap another one")
        if not isinstance(underlying_session, Session):
            raise UserError(
                "underlying_session must be a Session (get_items, add_items, pop_item, "
                f"clear_session), got {type(underlying_session).__name__}"
            )
        if compaction_mode not in MODES:
            raise ValueError(
                f"compaction_mode must be one of {', '.join(map(repr, MODES))}, "
                f"got {compaction_mode!r}"
            )
        if model is None:
            model = default_model_name()
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty model name, got {model!r}")
        if should_trigger_compaction is not None and not callable(should_trigger_compaction):
            raise TypeError(
                "should_trigger_compaction must be a callable taking a CompactionTriggerContext, "
                f"got {type(should_trigger_compaction).__name__}"
            )
        self.session_id = session_id
        self.underlying_session = underlying_session
        self.model = model
        self.compaction_mode: CompactionMode = compaction_mode
        self.should_trigger_compaction: CompactionTrigger = (
            should_trigger_compaction or default_trigger
        )
        self._client = OwnedOpenAIClient(
            client, what=f"OpenAIResponsesCompactionSession {session_id!r}"
        )
        self._response_id: str | None = None
        self._response_stored: bool | None = None
        self._compaction_lock = asyncio.Lock()
        self._mutation_lock = asyncio.Lock()
        # The stored history as this object wrote and read it, or None when unknown. Kept up to
        # date by every write through this object, so that deciding whether to compact reads
        # nothing: the history is read only when compaction is due (or still unknown).
        self._known: list[TResponseInputItem] | None = None

    # -- delegation ------------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the wrapped session's items, oldest first.

        Args:
            limit: Return only the latest `limit` items. `None` uses the session settings' limit,
                or returns everything.

        Returns:
            The stored items; after a compaction, the compacted items come first.
        """
        self._check_open()
        try:
            whole = resolve_session_limit(limit, self.session_settings) is None
        except (TypeError, ValueError):
            whole = False  # settings of another kind: the wrapped session interprets them
        if not whole:
            return await self.underlying_session.get_items(limit)
        # The whole history: remember it, so the next compaction decision needs no read. No
        # write through this object lands between the read and the remembering.
        async with self._mutation_lock:
            items = await self.underlying_session.get_items(WHOLE_HISTORY)
            self._known = copy.deepcopy(items)
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items to the wrapped session (waiting while a replacement is in progress).

        Args:
            items: The items to append, in order.
        """
        self._check_open()
        async with self._mutation_lock:
            try:
                await self.underlying_session.add_items(items)
            except BaseException:
                self._known = None  # it may or may not have been written
                raise
            if self._known is not None:
                self._known.extend(copy.deepcopy(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item of the wrapped session.

        Returns:
            The removed item, or `None` when the history is empty.
        """
        self._check_open()
        async with self._mutation_lock:
            try:
                item = await self.underlying_session.pop_item()
            except BaseException:
                self._known = None
                raise
            known = self._known
            if known and item is not None and canonical([known[-1]]) == canonical([item]):
                known.pop()
            else:
                self._known = None  # not the item we expected: read again when needed
            return item

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session and forget the latest response id."""
        self._check_open()
        async with self._mutation_lock:
            self._known = None
            await self.underlying_session.clear_session()
            self._known = []
            self._response_id = None
            self._response_stored = None

    def _note_response(self, args: OpenAIResponsesCompactionArgs) -> None:
        """Remember what checked `args` say about the latest response (its id, whether stored)."""
        response_id = args.get("response_id")
        if response_id is not None:
            if response_id != self._response_id:
                self._response_stored = None
            self._response_id = response_id
        if "store" in args:
            self._response_stored = args["store"]

    def _resolve_auto(self, mode: CompactionMode) -> tuple[str, bool]:
        """Resolve `"auto"` from what is known of the latest response.

        Returns:
            The mode to use, and whether `"auto"` chose it.

        Raises:
            ValueError: `"previous_response_id"` mode without a known response id.
        """
        automatic = mode == "auto"
        resolved: str = mode
        if automatic:
            resolved = (
                "input"
                if self._response_stored is False or self._response_id is None
                else "previous_response_id"
            )
        if resolved == "previous_response_id" and self._response_id is None:
            raise ValueError(
                "compaction_mode 'previous_response_id' needs a response id: pass "
                "run_compaction({'response_id': ...}) (the runner does after each model call), "
                "or use compaction_mode 'input' or 'auto'"
            )
        return resolved, automatic

    async def run_compaction(
        self, args: OpenAIResponsesCompactionArgs | None = None
    ) -> ResponseUsage | None:
        """Compact the stored history now, if the trigger (or `force`) says so.

        The [`Runner`][turnstore.Runner] calls this after it saves each model call. Call it
        yourself to compact outside a run, for example with `{"force": True}`.

        Args:
            args: What the caller knows about the latest response (`response_id`, `store`),
                an optional `compaction_mode` for this call, and `force=True` to compact
                whatever the trigger says.

        Returns:
            The token usage of the `responses.compact` call (the runner adds it to the run's
            usage). `None` when no call was made: the trigger declined, there was nothing to
            compact, or the compaction must wait. In `"previous_response_id"` mode it waits
            when tool outputs were stored after the latest response, until the next
            response. If `"auto"` chose that mode and `force` is set, the stored items are
            sent instead of waiting.

        Raises:
            ValueError: `"previous_response_id"` mode without a known response id, or an
                invalid argument.
            TypeError: `args` is not a dict, has an unknown key, or its `store` or `force` is
                not a bool.
            SessionError: The `responses.compact` call failed (an HTTP error or a timeout).
                The history is unchanged and the client's exception is chained.
            SessionStorageError: Writing the compacted history failed. With an atomic
                replacement nothing changed; elsewhere the previous history was restored (or,
                if even that failed, the message says so and the items are logged).
        """
        self._check_open()
        checked = check_args(args, self.compaction_mode)
        self._note_response(checked)
        mode, automatic = self._resolve_auto(checked.get("compaction_mode", self.compaction_mode))
        force = checked.get("force", False)
        async with self._compaction_lock:
            decided_on: list[TResponseInputItem] | None = None
            if not force and self._known is not None:
                # Decide on the history this object knows: no read unless compaction is due.
                decided_on = list(self._known)
                if await self._decide(mode, automatic, force, decided_on) is None:
                    return None
            atomic = self.underlying_session
            snapshot: HistorySnapshot | None = None
            async with self._mutation_lock:  # no write lands between the read and `_known`
                if is_atomic_replacement_session(atomic):
                    snapshot = await atomic.snapshot_history()
                    items = list(snapshot.items)
                else:
                    items = await self.underlying_session.get_items(WHOLE_HISTORY)
                self._known = copy.deepcopy(items)
            if decided_on is not None and canonical(decided_on) == canonical(items):
                resolved = self._resolve_mode(mode, automatic, force, items)
                assert resolved is not None  # `_decide` accepted these very items
            else:
                # First read, or others wrote to the wrapped session: decide on what is stored.
                decision = await self._decide(mode, automatic, force, items)
                if decision is None:
                    return None
                resolved = decision
            keep_from = compactable_prefix_length(items)
            if keep_from == 0:
                return None  # nothing stored yet, or only a pending tool call
            prefix = items[:keep_from]
            compacted = await self._compact(resolved, prefix)
            output = normalize_compacted_output(compacted.output or [])
            if not output:
                logger.warning(
                    "compaction of %s returned no items; the history is kept as it is",
                    self.session_id,
                )
                return compacted.usage
            if snapshot is not None and is_atomic_replacement_session(atomic):
                if keep_from < len(items):
                    snapshot = snapshot.prefix(keep_from)
                try:
                    replaced = await atomic.replace_history(snapshot, output)
                except BaseException:
                    self._known = None
                    raise
                if replaced:
                    known = self._known
                    # What followed the compacted prefix (and what was added since) stays.
                    self._known = (
                        [*copy.deepcopy(output), *known[keep_from:]] if known is not None else None
                    )
                else:
                    self._known = None
                    logger.warning(
                        "compaction result for %s discarded: the history changed during the call",
                        self.session_id,
                    )
            else:
                replaced = await self._replace(prefix, output)
            if replaced:
                logger.info(
                    "compacted %d items of %s into %d", len(prefix), self.session_id, len(output)
                )
            return compacted.usage

    def _resolve_mode(
        self, mode: str, automatic: bool, force: bool, items: list[TResponseInputItem]
    ) -> Literal["previous_response_id", "input"] | None:
        """The mode to compact `items` with, or `None` when the compaction must wait."""
        keep_from = compactable_prefix_length(items)
        if mode == "previous_response_id" and not (
            keep_from == len(items) and ends_with_model_output(items)
        ):
            # The server would compact the latest response's chain, which lacks what was
            # stored after that response: tool outputs (or a call still without one).
            if not (automatic and force):
                return None
            mode = "input"
        return cast(Literal["previous_response_id", "input"], mode)

    async def _decide(
        self, mode: str, automatic: bool, force: bool, items: list[TResponseInputItem]
    ) -> Literal["previous_response_id", "input"] | None:
        """The mode to compact `items` with now, or `None` (deferred, or not triggered)."""
        resolved = self._resolve_mode(mode, automatic, force, items)
        if resolved is None:
            logger.info(
                "compaction of %s deferred: the latest response does not cover the stored tool "
                "outputs yet",
                self.session_id,
            )
            return None
        if not force and not await self._triggered(resolved, items):
            logger.debug("compaction of %s not triggered", self.session_id)
            return None
        return resolved

    async def _triggered(
        self, mode: Literal["previous_response_id", "input"], items: list[TResponseInputItem]
    ) -> bool:
        context: CompactionTriggerContext = {
            "response_id": self._response_id,
            "compaction_mode": mode,
            "compaction_candidate_items": select_compaction_candidate_items(items),
            "session_items": list(items),
        }
        decision = self.should_trigger_compaction(context)
        if inspect.isawaitable(decision):
            decision = await decision
        return bool(decision)

    async def _compact(
        self, mode: Literal["previous_response_id", "input"], prefix: list[TResponseInputItem]
    ) -> CompactedResponse:
        client = await self._get_client()
        try:
            if mode == "previous_response_id":
                assert self._response_id is not None
                return await client.responses.compact(
                    model=self.model, previous_response_id=self._response_id
                )
            # Bookkeeping keys some writers store (`_...`, `created_by`) are not API input.
            items = [clean_input_item(cast(Mapping[str, Any], item)) for item in prefix]
            return await client.responses.compact(model=self.model, input=items)
        except openai.OpenAIError as exc:
            raise SessionError(
                f"compacting session {self.session_id!r} failed; its history is unchanged: {exc}"
            ) from exc
