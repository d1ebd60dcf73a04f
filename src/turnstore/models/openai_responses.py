"""OpenAIResponsesModel: the one place that speaks the OpenAI Responses API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseStreamEvent

from ..exceptions import ModelBehaviorError, ModelCallError
from .interface import ModelRequest

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel:
    """A model served by the OpenAI Responses API through `openai.AsyncOpenAI`.

    Args:
        model: The model name, for example `"gpt-4.1"` or `"o3"`.
        client: The client to use; it is not closed by the model. Without one, each call creates
            a client from the usual environment variables (`OPENAI_API_KEY`, `OPENAI_BASE_URL`,
            ...) and closes it afterwards.

    Example:
        ```python
        from openai import AsyncOpenAI
        from turnstore import Agent, OpenAIResponsesModel

        client = AsyncOpenAI()
        agent = Agent(name="Assistant", model=OpenAIResponsesModel("o3", client=client))
        ```
    """

    def __init__(self, model: str, *, client: AsyncOpenAI | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError(f"model must be a non-empty model name, not {model!r}")
        self.model = model
        self.client = client

    def __repr__(self) -> str:
        return f"OpenAIResponsesModel({self.model!r})"

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[AsyncOpenAI]:
        if self.client is not None:
            yield self.client
            return
        try:
            # The constructor loads certificates from disk: build it in a worker thread.
            client = await asyncio.to_thread(AsyncOpenAI)
        except openai.OpenAIError as exc:
            raise ModelCallError(
                f"cannot create an OpenAI client: {exc} (set OPENAI_API_KEY or pass a client)"
            ) from exc
        async with client:
            yield client

    def request_args(self, request: ModelRequest) -> dict[str, Any]:
        """Return the keyword arguments of `client.responses.create` for `request`.

        Args:
            request: The runner's request.

        Returns:
            The arguments: model, input, instructions, tools, the settings that are set, and
            `previous_response_id` or `conversation` when given.
        """
        args: dict[str, Any] = {"model": self.model, "input": request.input}
        if request.instructions is not None:
            args["instructions"] = request.instructions
        if request.tools:
            args["tools"] = [tool.to_param() for tool in request.tools]
        if request.previous_response_id is not None:
            args["previous_response_id"] = request.previous_response_id
        if request.conversation_id is not None:
            args["conversation"] = request.conversation_id
        args.update(request.model_settings.to_request_args())
        return args

    async def get_response(self, request: ModelRequest) -> Response:
        """Call `client.responses.create` and return the response.

        Raises:
            ModelCallError: The API call failed (the `openai` exception is chained).
            ModelBehaviorError: The response failed on the server side.
        """
        try:
            async with self._client() as client:
                response: Response = await client.responses.create(**self.request_args(request))
        except openai.OpenAIError as exc:
            raise ModelCallError(
                f"the Responses API call for {self.model!r} failed: {exc}"
            ) from exc
        _check_status(response)
        return response

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[ResponseStreamEvent]:
        """Call `client.responses.create(stream=True)` and yield its events.

        The stream ends with a `response.completed` (or `response.incomplete`) event carrying
        the whole response.

        Raises:
            ModelCallError: The API call failed (the `openai` exception is chained).
            ModelBehaviorError: The stream reported an error or ended without a final response.
        """
        finished = False
        try:
            async with self._client() as client:
                stream = await client.responses.create(stream=True, **self.request_args(request))
                async with stream:
                    async for event in stream:
                        if event.type == "error":
                            raise ModelBehaviorError(f"the response stream failed: {event.message}")
                        if event.type in (
                            "response.completed",
                            "response.incomplete",
                            "response.failed",
                        ):
                            _check_status(event.response)
                            finished = True
                        yield event
        except openai.OpenAIError as exc:
            raise ModelCallError(
                f"the streamed Responses API call for {self.model!r} failed: {exc}"
            ) from exc
        if not finished:
            raise ModelBehaviorError("the response stream ended without a response.completed event")


def _check_status(response: Response) -> None:
    if response.status == "failed":
        detail = response.error.message if response.error is not None else "no detail given"
        raise ModelBehaviorError(f"response {response.id} failed: {detail}")
