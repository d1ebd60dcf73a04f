"""RunConfig: options of one run that override the agent's and the session's own."""

from __future__ import annotations

from dataclasses import dataclass

from openai import AsyncOpenAI

from .memory.settings import SessionSettingsLike
from .models.interface import Model
from .models.settings import ModelSettings
from .session_input import SessionInputCallback

__all__ = ["RunConfig"]


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
            list of items the model receives; see
            [`merge_session_input`][turnstore.session_input.merge_session_input].
        openai_client: The `AsyncOpenAI` client for model names. Without one, each run creates
            a client from the environment (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) and closes it
            at the end.

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
