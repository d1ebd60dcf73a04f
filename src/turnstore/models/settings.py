"""ModelSettings: the tuning options sent with every model call of an agent."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from openai.types.shared_params import Reasoning

__all__ = ["ModelSettings"]


@dataclass(frozen=True)
class ModelSettings:
    """Options for the Responses API call; fields left at `None` are not sent.

    Attributes:
        temperature: Sampling temperature (reasoning models such as `o3` reject it).
        top_p: Nucleus sampling mass.
        max_output_tokens: Upper bound on the tokens a response may generate.
        reasoning: Reasoning options for reasoning models, for example `{"effort": "high"}` for
            `o3`. A plain dict with the Responses API's `reasoning` keys.
        tool_choice: `"auto"`, `"required"`, `"none"`, or the name of one function tool to force.
            A forced choice (`"required"` or a name) applies to the run's first model call; after
            the tools ran the runner lets the model choose, so it can answer.
        parallel_tool_calls: Whether the model may ask for several tool calls in one response.
        truncation: `"auto"` lets the API drop old input when it exceeds the context window.
        store: Whether the API stores the responses (the API's default is `True`).
        include: Extra output to include, for example `["reasoning.encrypted_content"]`, which a
            stateless (`store=False`) conversation with a reasoning model needs.
        metadata: Up to 16 string pairs attached to each response.
        extra_args: Further keyword arguments passed to `client.responses.create` as they are.

    Example:
        ```python
        from turnstore import Agent, ModelSettings

        agent = Agent(
            name="Planner",
            model="o3",
            model_settings=ModelSettings(reasoning={"effort": "high"}),
        )
        ```
    """

    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    reasoning: Reasoning | None = None
    tool_choice: Literal["auto", "required", "none"] | str | None = None
    parallel_tool_calls: bool | None = None
    truncation: Literal["auto", "disabled"] | None = None
    store: bool | None = None
    include: list[str] | None = None
    metadata: dict[str, str] | None = None
    extra_args: dict[str, Any] | None = None

    def resolve(self, override: ModelSettings | None) -> ModelSettings:
        """Return these settings with the override's non-None fields laid on top.

        Args:
            override: Settings whose fields win where they are not `None`, or `None`.

        Returns:
            A new `ModelSettings`; `self` is not changed.

        Example:
            ```python
            base = ModelSettings(temperature=0.2, max_output_tokens=200)
            assert base.resolve(ModelSettings(temperature=0.9)).temperature == 0.9
            ```
        """
        if override is None:
            return self
        if not isinstance(override, ModelSettings):
            raise TypeError(f"model settings must be ModelSettings, not {type(override).__name__}")
        changes = {
            field.name: getattr(override, field.name)
            for field in dataclasses.fields(override)
            if getattr(override, field.name) is not None
        }
        return dataclasses.replace(self, **changes)

    def to_request_args(self) -> dict[str, Any]:
        """Return the keyword arguments for `client.responses.create`, only the fields set.

        A `tool_choice` that is not one of `"auto"`, `"required"` or `"none"` is taken as the name
        of a function tool to force.
        """
        args: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None or field.name == "extra_args":
                continue
            if field.name == "tool_choice" and value not in ("auto", "required", "none"):
                value = {"type": "function", "name": value}
            args[field.name] = value
        if self.extra_args:
            args.update(self.extra_args)
        return args
