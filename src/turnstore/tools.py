"""Function tools: Python functions the model can call, with a JSON schema built from the signature.

The schema comes from the type hints (pydantic builds it) and the Google-style docstring (the
summary becomes the tool's description, the `Args:` entries the parameters' descriptions). It is a
strict schema as the Responses API wants it: every property required, no extra properties.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, get_type_hints, overload

import pydantic
from openai.types.responses import FunctionToolParam

from .exceptions import ModelBehaviorError, UserError

__all__ = ["FunctionTool", "function_tool", "parse_google_docstring", "strict_json_schema"]

ToolErrorFormatter = Callable[[str, BaseException], str]
"""Turns a tool's exception into the text the model receives as the tool's output."""


def _default_error_text(tool_name: str, error: BaseException) -> str:
    return (
        f"An error occurred while running the tool {tool_name!r}: {type(error).__name__}: {error}"
    )


@dataclass(frozen=True)
class FunctionTool:
    """A tool the model can call, backed by a Python function.

    Build one with [`function_tool`][turnstore.function_tool] rather than by hand.

    Attributes:
        name: The name the model uses to call the tool.
        description: What the tool does, shown to the model.
        params_json_schema: The JSON schema of the arguments object.
        on_invoke: Called with the arguments as a JSON string; returns the output text.
        strict_json_schema: Whether the API enforces the schema exactly (`strict: true`).
    """

    name: str
    description: str
    params_json_schema: dict[str, Any]
    on_invoke: Callable[[str], Awaitable[str]]
    strict_json_schema: bool = True

    def to_param(self) -> FunctionToolParam:
        """Return the tool's entry for the `tools` list of a Responses API request."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(self.params_json_schema),
            "strict": self.strict_json_schema,
        }


_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARG = re.compile(r"^\*{0,2}(\w+)(?:\s*\(([^)]*)\))?\s*:\s*(.*)$")


def parse_google_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and its argument descriptions.

    Args:
        doc: The docstring, or `None`.

    Returns:
        The text before the first section (`Args:`, `Returns:`, ...) with its lines joined, and
        a dict from argument name to its description (continuation lines joined).

    Example:
        ```python
        summary, args = parse_google_docstring('''Look up the weather.

        Args:
            city: The city name,
                for example "Paris".
        ''')
        assert summary == "Look up the weather."
        assert args == {"city": 'The city name, for example "Paris".'}
        ```
    """  # noqa: D214
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        header = _SECTION.match(line) if indent == 0 else None
        if header:
            section = header.group(1).lower()
            current, arg_indent = None, None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params") or not stripped:
            continue
        if arg_indent is None:
            arg_indent = indent
        match = _ARG.match(stripped) if indent <= arg_indent else None
        if match:
            current = match.group(1)
            args[current] = match.group(3).strip()
        elif current is not None:
            args[current] = f"{args[current]} {stripped}".strip()
    paragraphs = "\n".join(summary).strip().split("\n\n")
    description = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    return description, args


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `schema` in the strict form the Responses API accepts.

    Every object gets `additionalProperties: false` and lists all its properties as required;
    `title` and `default` keywords are removed; a lone `allOf` is inlined.

    Args:
        schema: A JSON schema, for example from pydantic's `model_json_schema()`.

    Returns:
        The strict schema (the input is not changed).

    Raises:
        UserError: An object allows arbitrary extra properties (for example `dict[str, int]`),
            which a strict schema cannot express.
    """
    strict: dict[str, Any] = _strict(copy.deepcopy(schema), path="$")
    return strict


def _strict(node: Any, path: str) -> Any:
    if isinstance(node, list):
        return [_strict(x, f"{path}[{i}]") for i, x in enumerate(node)]
    if not isinstance(node, dict):
        return node
    node.pop("title", None)
    node.pop("default", None)
    if node.get("type") == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            raise UserError(
                f"the tool parameter schema at {path} allows arbitrary keys "
                "(for example dict[str, ...]); strict tool schemas need fixed fields: use a "
                "pydantic model or TypedDict, or pass strict_mode=False to function_tool"
            )
        node["additionalProperties"] = False
        properties = node.setdefault("properties", {})
        node["required"] = list(properties)
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        del node["allOf"]
        node.update(all_of[0])
    for key, value in list(node.items()):
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            node[key] = {k: _strict(v, f"{path}.{key}.{k}") for k, v in value.items()}
        elif isinstance(value, dict | list) and key != "enum" and key != "const":
            node[key] = _strict(value, f"{path}.{key}")
    return node


def _output_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _build_tool(
    func: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    strict_mode: bool,
    failure_error_function: ToolErrorFormatter | None,
) -> FunctionTool:
    if not callable(func):
        raise TypeError(f"function_tool needs a function, not {type(func).__name__}")
    tool_name = name or func.__name__
    doc_description, arg_docs = parse_google_docstring(inspect.getdoc(func))
    signature = inspect.signature(func)
    try:
        hints = get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise UserError(f"cannot resolve the type hints of tool {tool_name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UserError(
                f"tool {tool_name!r}: *args and **kwargs cannot be described to the model; "
                f"give {param.name!r} explicit parameters"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            pydantic.Field(default=default, description=arg_docs.get(param.name)),
        )
    try:
        args_model = pydantic.create_model(f"{tool_name}_args", **fields)
        schema = args_model.model_json_schema()
    except pydantic.PydanticUserError as exc:
        reason = str(exc).strip().splitlines()[0]
        raise UserError(
            f"tool {tool_name!r}: its parameters cannot be described as JSON schema ({reason}); "
            "annotate them with JSON types (str, int, float, bool, lists, dicts, Literal, "
            "TypedDict or pydantic models)"
        ) from exc
    params_schema = strict_json_schema(schema) if strict_mode else schema
    is_async = inspect.iscoroutinefunction(func)
    positional = [
        p.name for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY
    ]

    async def on_invoke(arguments: str) -> str:
        try:
            parsed = args_model.model_validate_json(arguments or "{}")
        except pydantic.ValidationError as exc:
            raise ModelBehaviorError(
                f"the model called tool {tool_name!r} with invalid arguments {arguments!r}: {exc}"
            ) from exc
        values = {key: getattr(parsed, key) for key in fields}
        args = [values.pop(key) for key in positional]
        try:
            if is_async:
                result = await func(*args, **values)
            else:
                # A synchronous tool may block (file or network I/O): keep it off the event loop.
                result = await asyncio.to_thread(func, *args, **values)
        except Exception as exc:
            if failure_error_function is None:
                raise
            return failure_error_function(tool_name, exc)
        return _output_text(result)

    return FunctionTool(
        name=tool_name,
        description=description if description is not None else doc_description,
        params_json_schema=params_schema,
        on_invoke=on_invoke,
        strict_json_schema=strict_mode,
    )


@overload
def function_tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def function_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    strict_mode: bool = True,
    failure_error_function: ToolErrorFormatter | None = ...,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def function_tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    strict_mode: bool = True,
    failure_error_function: ToolErrorFormatter | None = _default_error_text,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function, sync or async, into a [`FunctionTool`][turnstore.FunctionTool].

    The parameters' type hints become the JSON schema of the arguments. Pydantic builds it, so
    pydantic models, `Literal`, enums and `TypedDict` work. The docstring's summary becomes the
    tool's description, and its `Args:` entries the parameters' descriptions. The return value is
    sent to the model as text: strings as they are, pydantic models and JSON-serialisable values
    as JSON, anything else through `str()`. A synchronous function runs in a worker thread.

    Use it bare (`@function_tool`) or with options (`@function_tool(name="weather")`).

    Args:
        func: The function to wrap (when used without parentheses).
        name: The tool's name; defaults to the function's name.
        description: The tool's description; defaults to the docstring's summary.
        strict_mode: Send a strict schema (`strict: true`), so the model's arguments always
            match it. Strict schemas list every parameter as required, defaults included.
        failure_error_function: Turns an exception raised by the function into the text the
            model sees as the tool's output, so it can recover. `None` re-raises the exception
            and ends the run.

    Returns:
        The tool, or a decorator that makes one.

    Raises:
        UserError: The signature cannot be described to the model (`*args`, `**kwargs`, an
            open-ended `dict` in strict mode, unresolvable type hints, a parameter type with no
            JSON schema).

    Example:
        ```python
        from typing import Literal

        from turnstore import Agent, function_tool


        @function_tool
        def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
            '''Return the current weather.

            Args:
                city: The city, for example "Tokyo".
                unit: The temperature unit.
            '''
            return f"Sunny, 21 {unit} in {city}"


        agent = Agent(name="Weather", tools=[get_weather])
        ```
    """  # noqa: D214
    if func is not None:
        return _build_tool(
            func,
            name=name,
            description=description,
            strict_mode=strict_mode,
            failure_error_function=failure_error_function,
        )

    def decorator(inner: Callable[..., Any]) -> FunctionTool:
        return _build_tool(
            inner,
            name=name,
            description=description,
            strict_mode=strict_mode,
            failure_error_function=failure_error_function,
        )

    return decorator
