"""RunConfig: options of one run that override the agent's and the session's own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from openai import AsyncOpenAI

from .items import TResponseInputItem
from .memory.settings import SessionSettingsLike
from .models.interface import Model
from .models.settings import ModelSettings
from .session_input import SessionInputCallback

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["CallModelData", "CallModelInputFilter", "ModelInputData", "RunConfig"]


@dataclass
class ModelInputData:
    """What one model call receives: its input items and instructions.

    Attributes:
        input: The input items, in order.
        instructions: The system instructions, or `None`.
    """

    input: list[TResponseInputItem]
    instructions: str | None


@dataclass
class CallModelData:
    """What `RunConfig.call_model_input_filter` receives before each model call.

    Attributes:
        model_data: The input and instructions about to be sent (copies: change them freely).
        agent: The agent being run.
        context: Always `None` in turnstore (the OpenAI Agents SDK passes its run context here).
    """

    model_data: ModelInputData
    agent: Agent
    context: Any = None


CallModelInputFilter: TypeAlias = Callable[
    [CallModelData], "ModelInputData | Awaitable[ModelInputData]"
]
"""`filter(data) -> ModelInputData`, sync or async: edits the input of one model call."""


@dataclass
class RunConfig:
    """Options for one run.

    Attributes:
        model: Use this model name or [`Model`][turnstore.Model] instead of the agent's.
        model_settings: Settings laid over the agent's `model_settings` (fields that are not
            `None` win).
        session_settings: Session settings laid over `session.session_settings` for this run,
            for example `{"limit": 20}` to send only the latest 20 items of history.
        session_input_callback: `callback(history, new_items)`, sync or async, returning the
            list of items the model receives. Items it returns from the history are not saved
            again; see [`SessionInputCallback`][turnstore.SessionInputCallback].
        call_model_input_filter: `filter(CallModelData) -> ModelInputData`, sync or async.
            It is called before each model call with the call's instructions and input: the
            history, the new input and the run's items so far. What it returns is sent
            instead, and nothing of it is saved. For example
            [`ToolOutputTrimmer`][turnstore.extensions.ToolOutputTrimmer]. It runs after the
            session's history window is loaded (see
            [`SessionSettings`][turnstore.SessionSettings]).
        openai_client: The `AsyncOpenAI` client used when the model is given by name (a
            `Model` object brings its own). Without one, each run creates a client from the
            environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) and closes it at the end.

    Example:
        ```python
        def last_two_then_new(history, new_items):
            return history[-2:] + new_items

        config = RunConfig(
            session_settings={"limit": 50},
            session_input_callback=last_two_then_new,
        )
        result = await Runner.run(agent, "And tomorrow?", session=session, run_config=config)
        ```
    """

    model: str | Model | None = None
    model_settings: ModelSettings | None = None
    session_settings: SessionSettingsLike | None = None
    session_input_callback: SessionInputCallback | None = None
    openai_client: AsyncOpenAI | None = None
    call_model_input_filter: CallModelInputFilter | None = None
