"""function_tool: schema from signature and docstring, strict form, invocation and errors."""

from __future__ import annotations

import asyncio
import json
from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel

from turnstore import Agent, FunctionTool, ModelBehaviorError, Runner, UserError, function_tool
from turnstore.testing import ScriptedModel, response_body
from turnstore.tools import parse_google_docstring, strict_json_schema


class Unit(Enum):
    C = "C"
    F = "F"


class Place(BaseModel):
    city: str
    country: str | None = None


def test_schema_from_signature_and_google_docstring() -> None:
    @function_tool
    def forecast(
        place: Place, days: int = 3, unit: Unit = Unit.C, mode: Literal["a", "b"] = "a"
    ) -> str:
        """Forecast the weather.

        Longer text that is part of the description.

        Args:
            place: Where to forecast,
                with a continuation line.
            days (int): How many days.
            unit: The unit.
            mode: A mode.

        Returns:
            The forecast.
        """
        return "x"

    assert isinstance(forecast, FunctionTool)
    assert forecast.name == "forecast"
    assert (
        forecast.description
        == "Forecast the weather.\n\nLonger text that is part of the description."
    )
    schema = forecast.params_json_schema
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["place", "days", "unit", "mode"]
    props = schema["properties"]
    assert props["place"]["description"] == "Where to forecast, with a continuation line."
    assert props["days"] == {"type": "integer", "description": "How many days."}
    assert props["mode"]["enum"] == ["a", "b"]
    place = schema["$defs"]["Place"]
    assert place["additionalProperties"] is False
    assert place["required"] == ["city", "country"]
    assert "title" not in json.dumps(schema)
    assert '"default"' not in json.dumps(schema)
    param = forecast.to_param()
    assert param["strict"] is True
    assert param["type"] == "function"


def test_options_and_non_strict_mode() -> None:
    @function_tool(name="lookup_v2", description="Custom.", strict_mode=False)
    def lookup(key: str, limit: int = 5) -> str:
        return key

    assert lookup.name == "lookup_v2"
    assert lookup.description == "Custom."
    assert lookup.params_json_schema["required"] == ["key"]
    assert lookup.to_param()["strict"] is False


def test_unsupported_signatures_are_clear_errors() -> None:
    def varargs(*values: int) -> int:
        return 0

    with pytest.raises(UserError, match=r"\*args and \*\*kwargs"):
        function_tool(varargs)

    def open_dict(mapping: dict[str, int]) -> int:
        return 0

    with pytest.raises(UserError, match="arbitrary keys"):
        function_tool(open_dict)
    assert function_tool(open_dict, strict_mode=False).name == "open_dict"

    with pytest.raises(TypeError, match="needs a function"):
        function_tool(42)  # type: ignore[call-overload]


async def test_invocation_sync_async_and_outputs() -> None:
    @function_tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @function_tool
    def place(city: str) -> Place:
        """Make a place."""
        return Place(city=city)

    assert await add.on_invoke('{"a": 2, "b": 3}') == "5"
    assert json.loads(await place.on_invoke('{"city": "Oslo"}')) == {
        "city": "Oslo",
        "country": None,
    }
    with pytest.raises(ModelBehaviorError, match="invalid arguments"):
        await add.on_invoke('{"a": "x"}')
    with pytest.raises(ModelBehaviorError, match="invalid arguments"):
        await add.on_invoke("not json")


async def test_tool_error_goes_to_the_model_or_is_raised() -> None:
    def broken(x: int) -> str:
        """Fail."""
        raise ValueError("bad x")

    friendly = function_tool(broken)
    assert "ValueError: bad x" in await friendly.on_invoke('{"x": 1}')
    strict = function_tool(broken, failure_error_function=None)
    with pytest.raises(ValueError, match="bad x"):
        await strict.on_invoke('{"x": 1}')


async def test_tools_of_one_response_run_concurrently_and_keep_call_order() -> None:
    started: list[str] = []
    both_started = asyncio.Event()

    @function_tool
    async def wait(name: str) -> str:
        """Wait until both calls are running."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 10)  # deadlocks if run one after the other
        return f"done {name}"

    calls = [
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "wait",
            "arguments": json.dumps({"name": n}),
            "status": "completed",
        }
        for n in ("first", "second")
    ]
    model = ScriptedModel([response_body(calls), "both done"])
    result = await Runner.run(Agent(name="A", model=model, tools=[wait]), "go")
    outputs = [i for i in result.new_items if i.get("type") == "function_call_output"]
    assert [(o["call_id"], o["output"]) for o in outputs] == [
        ("call_first", "done first"),
        ("call_second", "done second"),
    ]


def test_docstring_parser_and_strict_schema_helpers() -> None:
    assert parse_google_docstring(None) == ("", {})
    summary, args = parse_google_docstring(
        "Do it.\n\nArgs:\n    a: First.\n    b: Second\n        line.\n"
    )
    assert summary == "Do it."
    assert args == {"a": "First.", "b": "Second line."}
    schema = {
        "type": "object",
        "title": "T",
        "properties": {"a": {"type": "integer", "default": 1}},
    }
    assert strict_json_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
        "required": ["a"],
    }
    assert schema["title"] == "T"  # the input is not changed


def test_agent_validates_its_tools() -> None:
    with pytest.raises(TypeError, match="decorate the function with @function_tool"):
        Agent(name="A", tools=[print])  # type: ignore[list-item]

    @function_tool
    def same() -> str:
        """One."""
        return ""

    with pytest.raises(ValueError, match="two tools are named 'same'"):
        Agent(name="A", tools=[same, same])
