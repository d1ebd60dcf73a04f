"""The `Model` protocol: what the runner needs from a model, and the request it sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from openai.types.responses import Response, ResponseStreamEvent

from ..items import TResponseInputItem
from ..tools import FunctionTool
from .settings import ModelSettings

__all__ = ["Model", "ModelRequest"]


@dataclass
class ModelRequest:
    """Everything one model call receives.

    Attributes:
        instructions: The agent's instructions (the system prompt), or `None`.
        input: The input items for this call, oldest first.
        model_settings: The resolved settings of the call.
        tools: The function tools the model may call.
        previous_response_id: Continue a server-side response chain, or `None`.
        conversation_id: Use a server-side OpenAI conversation, or `None`.
    """

    instructions: str | None
    input: list[TResponseInputItem]
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    tools: list[FunctionTool] = field(default_factory=list)
    previous_response_id: str | None = None
    conversation_id: str | None = None


@runtime_checkable
class Model(Protocol):
    """A model the runner can call: anything with these two methods.

    Responses follow the OpenAI Responses API's shape (`openai.types.responses.Response`), since
    sessions store Responses API items. The built-in implementation is
    [`OpenAIResponsesModel`][turnstore.OpenAIResponsesModel];
    [`ScriptedModel`][turnstore.testing.ScriptedModel] scripts answers for tests.
    """

    async def get_response(self, request: ModelRequest) -> Response:
        """Return the model's complete response to `request`."""
        ...

    def stream_response(self, request: ModelRequest) -> AsyncIterator[ResponseStreamEvent]:
        """Stream the response as Responses API events, ending with `response.completed`."""
        ...
