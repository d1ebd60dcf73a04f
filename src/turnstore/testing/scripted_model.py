"""ScriptedModel: a [`Model`][turnstore.Model] that answers from a script, without HTTP."""

from __future__ import annotations

import copy
import inspect
import typing
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

from ..models.interface import ModelRequest
from .fake_openai import message_item, response_body, sse_events_for

__all__ = ["ScriptStep", "ScriptedModel"]

# An expression rather than one string, so the reference can print it over several lines.
ScriptStep: TypeAlias = (
    str
    | dict[str, Any]
    | Sequence[dict[str, Any] | BaseModel]
    | BaseException
    | Callable[[ModelRequest], "ScriptStep | Awaitable[ScriptStep]"]
)
"""One step of the script, the answer to one model call:

- a `str`: an assistant message with that text;
- a `dict`: a whole Responses API response body (see
  [`response_body`][turnstore.testing.response_body], `text_response`, `tool_call_response`);
- a list of output items (dicts or `openai` models): a response with that output;
- an exception: raised by the call;
- a function of the [`ModelRequest`][turnstore.ModelRequest], sync or async, returning one of
  the above.
"""


def _event_classes() -> dict[str, type[BaseModel]]:
    # ResponseStreamEvent is Annotated[Union[...], ...]: map each member's `type` literal to it.
    union = typing.get_args(ResponseStreamEvent)[0]
    classes: dict[str, type[BaseModel]] = {}
    for cls in typing.get_args(union):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            classes[literal] = cls
    return classes


_EVENT_CLASSES = _event_classes()


def _build_response(body: dict[str, Any]) -> Response:
    # `construct` builds the nested openai models without validation, as the openai client does
    # with server JSON, so bodies that the real client accepts are accepted here too.
    return Response.construct(**body)


class ScriptedModel:
    """A model that answers from a script, one step per call, for fast tests without a server.

    Every call takes the next step of the script and records the request it received (a deep
    copy) in `calls`. Streaming calls turn the scripted response into the Responses API's event
    sequence, text split into small deltas.

    Args:
        steps: The steps, one per model call, in order (see `ScriptStep`).

    Example:
        ```python
        from turnstore import Agent, Runner, SQLiteSession
        from turnstore.testing import ScriptedModel, tool_call_response

        model = ScriptedModel([tool_call_response("get_weather", {"city": "Oslo"}), "Sunny."])
        agent = Agent(name="Weather", model=model, tools=[get_weather])
        async with SQLiteSession("t") as session:
            result = await Runner.run(agent, "Weather in Oslo?", session=session)
        assert result.final_output == "Sunny."
        assert model.calls[1].input[-1]["type"] == "function_call_output"
        ```
    """

    def __init__(self, steps: Iterable[ScriptStep] = ()) -> None:
        self._steps: deque[ScriptStep] = deque(steps)
        self.calls: list[ModelRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedModel(remaining={len(self._steps)}, calls={len(self.calls)})"

    def enqueue(self, *steps: ScriptStep) -> None:
        """Append steps to the script."""
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """How many scripted steps have not been used yet."""
        return len(self._steps)

    @property
    def last_call(self) -> ModelRequest:
        """The most recent request (raises `IndexError` before the first call)."""
        return self.calls[-1]

    async def _next_body(self, request: ModelRequest) -> dict[str, Any]:
        self.calls.append(copy.deepcopy(request))
        if not self._steps:
            raise AssertionError(
                f"ScriptedModel: call {len(self.calls)} has no scripted step "
                f"({len(self.calls) - 1} were scripted)"
            )
        step: Any = self._steps.popleft()
        while callable(step) and not isinstance(step, BaseException | type):
            step = step(request)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return response_body([message_item(step)])
        if isinstance(step, dict):
            body = copy.deepcopy(step)
            return body if "object" in body else response_body(list(body.get("output", [])))
        if isinstance(step, Sequence):
            return response_body(
                [
                    item.model_dump(mode="json", exclude_unset=True)
                    if isinstance(item, BaseModel)
                    else copy.deepcopy(item)
                    for item in step
                ]
            )
        raise TypeError(f"ScriptedModel: unusable script step {step!r}")

    async def get_response(self, request: ModelRequest) -> Response:
        """Return the next scripted response (or raise the scripted exception)."""
        return _build_response(await self._next_body(request))

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[ResponseStreamEvent]:
        """Yield the next scripted response as Responses API stream events."""
        body = await self._next_body(request)
        for event in sse_events_for(body):
            yield typing.cast(ResponseStreamEvent, _EVENT_CLASSES[event["type"]].construct(**event))
