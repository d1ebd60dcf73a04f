"""OpenAIResponsesModel: the one place that speaks the OpenAI Responses API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseStreamEvent

from ..exceptions import ModelBehaviorError, ModelCallError
from .interface import ModelRequest
from .response_check import check_response

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel:
    """A model served by the OpenAI Responses API through `openai.AsyncOpenAI`.

    An agent whose `model` is a name already uses this class. Build one yourself to pass your
    own client: another base URL, API key, timeout or retry policy.

    Args:
        model: The model name, for example `"gpt-4.1"` or `"o3"`.
        client: The client to use; it is not closed by the model. Without one, each call creates
            a client from the usual environment variables (`OPENAI_API_KEY`, `OPENAI_BASE_URL`,
            ...) and closes it afterwards.

    Raises:
        TypeError: `model` is not a non-empty string.

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
            ModelCallError: The API call failed, or its answer was not valid JSON (truncated,
                an HTML error page, ...) or was nested too deeply to read; the underlying
                exception is chained.
            ModelBehaviorError: The response failed on the server side, or lacks a field the
                runner reads (an id, typed output items, usable token counts).
        """
        args = self.request_args(request)
        with _call_errors(
            f"the Responses API call for {self.model!r}",
            f"the Responses API answer for {self.model!r}",
        ):
            async with self._client() as client:
                response: Any = await client.responses.create(**args)
        return check_response(response)

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[ResponseStreamEvent]:
        """Call `client.responses.create(stream=True)` and yield its events.

        The stream ends with a `response.completed` (or `response.incomplete`) event carrying
        the whole response.

        Raises:
            ModelCallError: The API call failed, or an event of the stream was not valid JSON
                or was nested too deeply to read (the underlying exception is chained).
            ModelBehaviorError: The stream reported an error, sent an event without a type,
                ended without a final response, or its final response is not usable.
        """
        args = self.request_args(request)
        finished = False
        async with contextlib.AsyncExitStack() as stack:
            try:
                client = await stack.enter_async_context(self._client())
                stream = await client.responses.create(stream=True, **args)
                await stack.enter_async_context(stream)
                events = stream.__aiter__()
            except openai.OpenAIError as exc:
                raise ModelCallError(
                    f"the streamed Responses API call for {self.model!r} failed: {exc}"
                ) from exc
            while True:
                try:
                    with _call_errors(
                        f"the streamed Responses API call for {self.model!r}",
                        f"an event of the streamed Responses API answer for {self.model!r}",
                    ):
                        event: Any = await events.__anext__()
                except StopAsyncIteration:
                    break
                kind = getattr(event, "type", None)
                if not isinstance(kind, str):
                    raise ModelBehaviorError(
                        f"the response stream sent an event without a type: {event!r:.200}"
                    )
                if kind == "error":
                    message = getattr(event, "message", None)
                    raise ModelBehaviorError(f"the response stream failed: {message}")
                if kind in ("response.completed", "response.incomplete", "response.failed"):
                    check_response(getattr(event, "response", None))
                    finished = True
                # Yielded outside any `try`: what the consumer does is not mapped here.
                yield event
        if not finished:
            raise ModelBehaviorError("the response stream ended without a response.completed event")


@contextlib.contextmanager
def _call_errors(call: str, answer: str) -> Iterator[None]:
    """Raise what the API call inside fails with as `ModelCallError`, naming `call` or `answer`."""
    try:
        yield
    except openai.OpenAIError as exc:
        raise ModelCallError(f"{call} failed: {exc}") from exc
    except ValueError as exc:  # json.JSONDecodeError: a body or event that is not JSON
        raise ModelCallError(f"{answer} is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # valid JSON nested deeper than the decoder can follow
        raise ModelCallError(f"{answer} is nested too deeply to read: {exc}") from exc
