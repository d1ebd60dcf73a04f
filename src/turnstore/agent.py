"""Agent: a model, its instructions, its settings and its tools."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .defaults import DEFAULT_MODEL, default_model_name
from .models.interface import Model
from .models.settings import ModelSettings
from .tools import FunctionTool

__all__ = ["DEFAULT_MODEL", "Agent", "default_model_name"]


@dataclass
class Agent:
    """A model with instructions and tools, run by [`Runner`][turnstore.Runner].

    An agent holds no conversation state: pass a session to the run for memory. One session can
    be shared by several agents.

    Attributes:
        name: A name for the agent (used in errors and logs).
        instructions: The system prompt, or `None`.
        model: A Responses API model name (for example `"gpt-4.1"` or `"o3"`), a
            [`Model`][turnstore.Model] object, or `None` for the default model
            (`$OPENAI_DEFAULT_MODEL`, else `"gpt-5.6-luna"`).
        model_settings: Temperature, reasoning effort and other options of every model call.
        tools: Function tools the model may call (see
            [`function_tool`][turnstore.function_tool]).

    Example:
        ```python
        from turnstore import Agent, ModelSettings

        agent = Agent(
            name="Assistant",
            instructions="Reply very concisely.",
            model="o3",
            model_settings=ModelSettings(reasoning={"effort": "low"}),
        )
        ```
    """

    name: str
    instructions: str | None = None
    model: str | Model | None = None
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    tools: list[FunctionTool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Agent name must be a non-empty string, not {self.name!r}")
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise TypeError(
                f"Agent {self.name!r}: instructions must be a string or None, "
                f"not {type(self.instructions).__name__}"
            )
        if self.model is not None and not isinstance(self.model, str | Model):
            raise TypeError(
                f"Agent {self.name!r}: model must be a model name, a Model or None, "
                f"not {type(self.model).__name__}"
            )
        if not isinstance(self.model_settings, ModelSettings):
            raise TypeError(
                f"Agent {self.name!r}: model_settings must be ModelSettings, "
                f"not {type(self.model_settings).__name__}"
            )
        seen: set[str] = set()
        for index, tool in enumerate(self.tools):
            if not isinstance(tool, FunctionTool):
                raise TypeError(
                    f"Agent {self.name!r}: tools[{index}] is a {type(tool).__name__}, not a "
                    "FunctionTool; decorate the function with @function_tool"
                )
            if tool.name in seen:
                raise ValueError(f"Agent {self.name!r}: two tools are named {tool.name!r}")
            seen.add(tool.name)

    def clone(self, **changes: Any) -> Agent:
        """Return a copy of the agent with some fields replaced.

        Example:
            ```python
            terse = agent.clone(instructions="Answer in one word.")
            ```
        """
        return dataclasses.replace(self, **changes)
