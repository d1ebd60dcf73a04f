"""The events that `RunResultStreaming.stream_events()` yields while a streamed run goes on.

The last event, `RunCompleteEvent`, carries the run's result, so it lives in `result.py` with the
`StreamEvent` union: this module imports nothing from `result.py`, which keeps the import graph
free of cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openai.types.responses import ResponseStreamEvent

from .items import TResponseInputItem

__all__ = ["RawResponseEvent", "RunItemEvent", "TextDeltaEvent"]


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
