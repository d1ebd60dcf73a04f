"""Results of a run: RunResult, RunResultStreaming, and token Usage."""

from __future__ import annotations

import asyncio
import copy
import weakref
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from openai.types.responses import Response, ResponseUsage

from .conversion import input_items_from
from .exceptions import UserError
from .items import TResponseInputItem
from .stream_events import RawResponseEvent, RunItemEvent, TextDeltaEvent

if TYPE_CHECKING:
    from .agent import Agent

__all__ = [
    "RunCompleteEvent",
    "RunResult",
    "RunResultBase",
    "RunResultStreaming",
    "StreamEvent",
    "Usage",
]


def _part(holder: Any, name: str) -> Any:
    """A field of a usage object or of the same usage as a dict (`None` when absent)."""
    if holder is None:
        return None
    if isinstance(holder, Mapping):
        return holder.get(name)
    return getattr(holder, name, None)


def _count(holder: Any, name: str) -> int:
    """A token count of a usage object or dict, 0 when absent."""
    return int(_part(holder, name) or 0)


@dataclass
class Usage:
    """Tokens used by a run, summed over its model calls (and compaction calls).

    Attributes:
        requests: How many API calls were made.
        input_tokens: Input tokens over all calls.
        output_tokens: Output tokens over all calls.
        total_tokens: Input plus output tokens.
        cached_input_tokens: Input tokens served from the prompt cache.
        reasoning_tokens: Output tokens spent on reasoning (reasoning models such as `o3`).
    """

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def add_response_usage(self, usage: ResponseUsage | None) -> None:
        """Count one API call and add its token usage (`None` counts the call only).

        Args:
            usage: The `usage` of a Responses API response, or `None`.
        """
        self.requests += 1
        if usage is None:
            return
        self.input_tokens += _count(usage, "input_tokens")
        self.output_tokens += _count(usage, "output_tokens")
        self.total_tokens += _count(usage, "total_tokens")
        self.cached_input_tokens += _count(_part(usage, "input_tokens_details"), "cached_tokens")
        self.reasoning_tokens += _count(_part(usage, "output_tokens_details"), "reasoning_tokens")

    def add(self, other: Usage) -> None:
        """Add another `Usage` to this one, field by field."""
        self.requests += other.requests
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.reasoning_tokens += other.reasoning_tokens


@dataclass
class RunResultBase:
    """What a run produced: the fields shared by `RunResult` and `RunResultStreaming`.

    The reference shows those two classes, not this one: each lists these fields under its own
    Attributes.
    """

    input: str | list[TResponseInputItem]
    last_agent: Agent
    new_items: list[TResponseInputItem] = field(default_factory=list)
    final_output: str | None = None
    raw_responses: list[Response] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def last_response_id(self) -> str | None:
        """The id of the run's last Responses API response, or `None` before the first one.

        Pass it as `previous_response_id` to continue the conversation on the server instead of
        in a session.
        """
        return self.raw_responses[-1].id if self.raw_responses else None

    def to_input_list(self) -> list[TResponseInputItem]:
        """Return the run's input followed by its new items, as input items.

        This is the manual way to carry a conversation into the next run (append the next user
        message and pass the list as input). A session does this for you.

        Returns:
            A new list (deep copies).

        Example:
            ```python
            result = await Runner.run(agent, "What city is the Golden Gate Bridge in?")
            next_input = result.to_input_list() + [{"role": "user", "content": "What state?"}]
            result = await Runner.run(agent, next_input)
            ```
        """
        return input_items_from(self.input) + copy.deepcopy(self.new_items)


@dataclass
class RunResult(RunResultBase):
    """The result of [`Runner.run`][turnstore.Runner.run] and `Runner.run_sync`.

    Attributes:
        final_output: The text of the agent's final message.
        new_items: The items the run generated, as input items (the form a session stores):
            model messages, reasoning items, tool calls and tool outputs.
        usage: Tokens used by the run.
        input: The input passed to the run, as given (a string or a list of items). It does not
            include the session's history.
        raw_responses: Every Responses API response of the run, in order.
        last_agent: The agent that ran.

    Example:
        ```python
        result = await Runner.run(agent, "Hi", session=session)
        print(result.final_output, result.usage.total_tokens, result.last_response_id)
        ```
    """


_DONE = object()


@dataclass(frozen=True)
class RunCompleteEvent:
    """The last event: the run finished.

    Attributes:
        result: The finished run's result.
    """

    result: RunResult
    type: Literal["run_complete"] = "run_complete"


StreamEvent: TypeAlias = RawResponseEvent | TextDeltaEvent | RunItemEvent | RunCompleteEvent
"""Any event of a streamed run; tell them apart with `isinstance` or the `type` field."""


@dataclass
class RunResultStreaming(RunResultBase):
    """The result of [`Runner.run_streamed`][turnstore.Runner.run_streamed].

    The run starts when you iterate
    [`stream_events`][turnstore.RunResultStreaming.stream_events]. Its fields fill in as
    the run goes; `final_output` is set when it finishes.

    Attributes:
        final_output: The text of the agent's final message; `None` until the run finishes.
        new_items: The items the run generated, as input items (the form a session stores):
            model messages, reasoning items, tool calls and tool outputs. Complete once the run
            finishes.
        usage: Tokens used by the run; complete once it finishes.
        is_complete: `True` once the run has finished with a final answer. It stays `False`
            when the run failed or was cancelled.
        input: The input passed to the run, as given (a string or a list of items). It does not
            include the session's history.
        raw_responses: Every Responses API response of the run, in order; complete once it
            finishes.
        last_agent: The agent that runs.

    Example:
        ```python
        result = Runner.run_streamed(agent, "Tell me a joke", session=session)
        async for event in result.stream_events():
            if isinstance(event, TextDeltaEvent):
                print(event.delta, end="", flush=True)
        print(result.final_output)
        ```
    """

    is_complete: bool = False
    # Set by `Runner.run_streamed` (not a constructor argument): runs the agent, once.
    _start: Callable[[RunResultStreaming], Coroutine[Any, Any, RunResult]] | None = field(
        default=None, init=False, repr=False
    )
    _queue: asyncio.Queue[Any] | None = field(default=None, init=False, repr=False)
    _task: asyncio.Task[RunResult] | None = field(default=None, init=False, repr=False)

    def _emit(self, event: StreamEvent) -> None:
        if self._queue is not None:
            self._queue.put_nowait(event)

    def stream_events(self) -> AsyncGenerator[StreamEvent, None]:
        """Run the agent and yield its events as they happen.

        Yields [`TextDeltaEvent`][turnstore.TextDeltaEvent]s while text is generated,
        a [`RunItemEvent`][turnstore.RunItemEvent] for each new item,
        [`RawResponseEvent`][turnstore.RawResponseEvent]s for every API event, and last a
        [`RunCompleteEvent`][turnstore.RunCompleteEvent] with the final result.

        Leaving the loop early (`break`) cancels the run at once, as does
        [`cancel`][turnstore.RunResultStreaming.cancel]: every item completed before that (each
        is saved as soon as it is done) stays saved. A write the run had started still lands;
        the next run on the same session waits for it before reading the history. To wait for
        it yourself, `await result.aclose()`. (Where the loop keeps a reference to the events,
        as in `events = result.stream_events()`, the run goes on until `events` is closed or
        dropped.)

        Raises:
            UserError: The events were already consumed (a run streams once), or the result
                was closed.
            AgentsError: The run failed; raised after the events that came before the failure.
        """
        return _EventStream(self._events(), self._abandon)

    async def _events(self) -> AsyncGenerator[StreamEvent, None]:
        if self._start is None:
            raise UserError(
                "stream_events() can be consumed once per run_streamed() call, and not after "
                "aclose()"
            )
        start, self._start = self._start, None
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue
        task = asyncio.ensure_future(start(self))
        self._task = task
        task.add_done_callback(lambda _: queue.put_nowait(_DONE))
        try:
            while True:
                event = await queue.get()
                if event is _DONE:
                    break
                yield event
            result = task.result()  # raises the run's error, if any
            yield RunCompleteEvent(result=result)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait((task,))
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: the caller saw it or left early

    def cancel(self) -> None:
        """Cancel the run; `stream_events()` then stops with `asyncio.CancelledError`.

        The run stops at once, except for a write it has started, which lands first. The next
        run on the same session (in any thread of this process) waits for that write before it
        reads the history, so no tool output is stored twice. A tool that was still running
        when the run was cancelled has no stored output: `Runner.run(agent, [], session=session)`
        runs it again (see [Retrying a failed run](../running_agents.md#retrying-a-failed-run)).
        To wait until the run has let go, `await result.aclose()`.
        """
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def aclose(self) -> None:
        """Cancel the run if it is still going, and wait until it has let go of its session.

        When it returns, every write the run started has landed or failed, and no other will
        start. A run that finished is left as it is; one that never started never will. Calling
        it again does nothing. `async with contextlib.aclosing(result):` calls it on leaving
        the block.

        Example:
            ```python
            result = Runner.run_streamed(agent, "Plan my trip", session=session)
            async for event in result.stream_events():
                if user_pressed_stop():
                    break
            await result.aclose()  # the abandoned run has let go of the session
            await Runner.run(agent, "Only the first day, please", session=session)
            ```
        """
        self._start = None
        task = self._task
        if task is None:
            return
        task.cancel()
        await asyncio.wait((task,))
        if not task.cancelled():
            task.exception()  # retrieved: the caller closed the run and does not want it

    def _abandon(self) -> None:
        """Cancel the run when its event stream is dropped unfinished (a `break` out of it)."""
        task = self._task
        if task is None or task.done():
            return
        loop = task.get_loop()
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            task.cancel()  # at once: the caller's next statement may start another run
        elif not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)


class _EventStream(AsyncGenerator[StreamEvent, None]):
    """The events of a streamed run, which is cancelled when they are dropped unfinished.

    An abandoned async generator is closed only later, by the event loop; this wrapper is
    dropped at once when an `async for` loop over it is left, and cancels the run then.
    """

    def __init__(
        self, events: AsyncGenerator[StreamEvent, None], on_drop: Callable[[], None]
    ) -> None:
        self._events = events
        weakref.finalize(self, on_drop).atexit = False

    def __aiter__(self) -> _EventStream:
        return self

    def __anext__(self) -> Coroutine[Any, Any, StreamEvent]:
        return self._events.__anext__()

    def asend(self, value: None) -> Coroutine[Any, Any, StreamEvent]:
        return self._events.asend(value)

    def athrow(self, *args: Any) -> Coroutine[Any, Any, StreamEvent]:
        return self._events.athrow(*args)

    def aclose(self) -> Coroutine[Any, Any, None]:
        return self._events.aclose()
