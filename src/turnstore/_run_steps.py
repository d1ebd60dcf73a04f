"""The steps of a run's turn, for `runner.py`: internal, nothing here is public API.

Calling the model (streamed or not), running the requested tools concurrently, saving a
streamed run's items as each completes, and the registry of the writes runs have in flight,
which a run on the same session id waits for before it reads the history.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from openai.types.responses import Response, ResponseFunctionToolCall

from .agent import Agent
from .conversion import output_item_to_input_item
from .exceptions import ModelBehaviorError
from .items import TResponseInputItem
from .memory.codec import encode_items
from .memory.mutation import await_session_mutation
from .memory.session import Session
from .models.interface import Model, ModelRequest
from .models.response_check import check_output_item
from .result import RunResultStreaming
from .stream_events import RawResponseEvent, RunItemEvent, TextDeltaEvent
from .tools import FunctionTool

__all__ = [
    "ItemSaver",
    "StreamedOutputs",
    "call_model",
    "item_saver",
    "pending_tool_calls",
    "run_tools",
    "storable",
    "write",
    "writes_landed",
]


async def call_model(
    model: Model,
    request: ModelRequest,
    streaming: RunResultStreaming | None,
    streamed: StreamedOutputs,
) -> Response:
    if streaming is None:
        return await model.get_response(request)
    final: Response | None = None
    events = model.stream_response(request)
    try:
        async for event in events:
            kind = getattr(event, "type", None)
            if kind == "response.output_text.delta":
                delta, item_id = getattr(event, "delta", None), getattr(event, "item_id", None)
                if not isinstance(delta, str) or not isinstance(item_id, str):
                    raise ModelBehaviorError(
                        f"a response.output_text.delta event lacks its delta or item_id: "
                        f"{event!r:.200}"
                    )
                streaming._emit(RawResponseEvent(data=event))
                streaming._emit(TextDeltaEvent(delta=delta, item_id=item_id))
                continue
            streaming._emit(RawResponseEvent(data=event))
            if kind == "response.output_item.done":
                index, item = getattr(event, "output_index", None), getattr(event, "item", None)
                await streamed.done(index, item)
            if kind in ("response.completed", "response.incomplete"):
                final = getattr(event, "response", None)
    finally:
        # Close an async generator now, not at garbage collection (its HTTP stream included).
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()
    if final is None:
        raise ModelBehaviorError("the model's stream ended without a completed response")
    return final


async def run_tools(
    calls: list[ResponseFunctionToolCall],
    tools: dict[str, FunctionTool],
    agent: Agent,
    *,
    on_output: ItemSaver | None = None,
) -> list[TResponseInputItem]:
    """Run the requested tools concurrently; outputs come back in the order of the calls.

    `on_output` (streamed runs) receives each output as soon as its tool returns.
    """
    for call in calls:
        if call.name not in tools:
            known = ", ".join(sorted(tools)) or "none"
            raise ModelBehaviorError(
                f"the model called tool {call.name!r}, which agent {agent.name!r} does not "
                f"have (its tools: {known})"
            )

    async def invoke(call: ResponseFunctionToolCall) -> TResponseInputItem:
        text = await tools[call.name].on_invoke(call.arguments)
        output = cast(
            TResponseInputItem,
            {"type": "function_call_output", "call_id": call.call_id, "output": text},
        )
        if on_output is not None:
            await on_output([output])
        return output

    tasks = [asyncio.ensure_future(invoke(call)) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


_T = TypeVar("_T")

_writes_in_flight: dict[object, set[concurrent.futures.Future[None]]] = {}
"""The writes of runs still in progress, by session id, in every thread of the process."""
_writes_lock = threading.Lock()


def _write_key(session: object) -> object:
    session_id = getattr(session, "session_id", None)
    return session_id if isinstance(session_id, str) else id(session)


async def write(session: object, mutation: Awaitable[_T]) -> _T:
    """Run one of a run's session writes to its end, even if the run is cancelled.

    Until it has landed (or failed), the write is listed in `_writes_in_flight`, where the next
    run on the same session id waits for it before reading the history (`writes_landed`), on
    any thread and event loop of the process: a cancelled or abandoned run's last write can
    never land after that read, which would store a tool output twice.
    """
    key = _write_key(session)
    landed: concurrent.futures.Future[None] = concurrent.futures.Future()
    with _writes_lock:
        _writes_in_flight.setdefault(key, set()).add(landed)
    try:
        return await await_session_mutation(mutation)
    finally:
        landed.set_result(None)
        with _writes_lock:
            writes = _writes_in_flight.get(key)
            if writes is not None:
                writes.discard(landed)
                if not writes:
                    del _writes_in_flight[key]


async def writes_landed(session: object) -> None:
    """Wait until the writes that runs have in progress on this session id have landed."""
    with _writes_lock:
        writes = list(_writes_in_flight.get(_write_key(session), ()))
    if writes:
        await asyncio.wait([asyncio.wrap_future(write) for write in writes])


ItemSaver = Callable[[list[TResponseInputItem]], Awaitable[None]]
"""Saves (and, in a streamed run, announces) items as they are produced."""


def item_saver(session: Session | None, streaming: RunResultStreaming | None) -> ItemSaver | None:
    """In a streamed run: save each batch of completed items at once, then announce it."""
    if streaming is None:
        return None

    async def save(items: list[TResponseInputItem]) -> None:
        if session is not None:
            await write(session, session.add_items(items))
        for item in items:
            streaming._emit(RunItemEvent(item=item))

    return save


class StreamedOutputs:
    """The output items of one streamed response, saved as the stream reports each one done.

    A reasoning item is held until the item it precedes is done (the Responses API rejects a
    reasoning item without its following item), then both are saved in one write. `finish`
    saves what the stream did not report, so no item is saved twice or left out.
    """

    def __init__(self, save: ItemSaver | None) -> None:
        self._save = save
        self._saved: set[int] = set()
        self._held: list[tuple[int, TResponseInputItem]] = []

    async def done(self, index: Any, raw: Any) -> None:
        if self._save is None or not isinstance(index, int) or raw is None:
            return
        what = "the streamed response"
        check_output_item(index, raw, what)
        [item] = storable([output_item_to_input_item(raw)], what)
        self._held.append((index, item))
        if item.get("type") == "reasoning":
            return
        batch, self._held = self._held, []
        await self._save([held for _, held in batch])
        self._saved.update(position for position, _ in batch)

    async def finish(self, outputs: list[TResponseInputItem]) -> None:
        if self._save is None:
            return
        rest = [item for index, item in enumerate(outputs) if index not in self._saved]
        self._held = []
        if rest:
            await self._save(rest)
            self._saved.update(range(len(outputs)))


def storable(items: list[TResponseInputItem], what: str) -> list[TResponseInputItem]:
    """Return `items`, checked storable: the output of `what` is unusable otherwise."""
    try:
        # Every item the session would store must be storable (a lone surrogate in the text is
        # valid JSON but not UTF-8): unusable, before anything is stored.
        encode_items(items)
    except TypeError as exc:
        raise ModelBehaviorError(
            f"{what}: its output cannot be stored: {str(exc).replace('item ', 'output item ', 1)}"
        ) from exc
    return items


def pending_tool_calls(tail: list[TResponseInputItem]) -> list[ResponseFunctionToolCall]:
    """The function calls of `tail` (the items after the history's last message) without output."""
    items = [cast(Mapping[str, Any], item) for item in tail]
    answered = {item.get("call_id") for item in items if item.get("type") == "function_call_output"}
    return [
        ResponseFunctionToolCall(
            type="function_call",
            name=str(item.get("name")),
            arguments=str(item.get("arguments")),
            call_id=str(item.get("call_id")),
        )
        for item in items
        if item.get("type") == "function_call" and item.get("call_id") not in answered
    ]
