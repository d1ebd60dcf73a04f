"""The events that `RunResultStreaming.stream_events()` yields while a streamed run goes on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from openai.types.responses import ResponseStreamEvent

from .items import TResponseInputItem

if TYPE_CHECKING:
    from .result import RunResult

__all__ = ["RawResponseEvent", "RunCompleteEvent", "RunItemEvent", "StreamEvent", "TextDeltaEvent"]


@dataclass(frozen=True)
class RawResponseEvent:
    """One event of the Responses API stream, passed through unchanged.

    Attributes:
        data: The `openai` event object (`response.created`, `response.output_text.delta`, ...).
    """

    data: ResponseStreamEvent
    type: Literal["raw_response_event"] = "raw_response_event"


@dataclass(frozen=True)
class TextDeltaEvent:
    """A piece of the assistant's text as it is generated.

    Attributes:
        delta: The new text.
        item_id: The id of the message item the text belongs to.
    """

    delta: str
    item_id: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class RunItemEvent:
    """A new item of the run: an output item of the model, or a tool's output.

    Attributes:
        item: The item as a Responses API input item (the form it is stored in).
    """

    item: TResponseInputItem
    type: Literal["run_item"] = "run_item"


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
