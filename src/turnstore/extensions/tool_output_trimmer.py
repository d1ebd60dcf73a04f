"""ToolOutputTrimmer: trims large tool outputs of older turns out of a model's input.

Agents accumulate large tool outputs (search results, code execution output) that cost tokens
but lose relevance as the conversation goes on. `ToolOutputTrimmer` is a
`RunConfig(call_model_input_filter=...)` that replaces the bulky outputs of older turns with a
short preview before each model call, keeping recent turns whole. The session keeps the full
outputs: only what the model receives is trimmed.

It behaves as the OpenAI Agents SDK's `agents.extensions.ToolOutputTrimmer` (the same arguments,
previews and rules; its algorithm is adapted from the SDK's, MIT licence, (c) OpenAI) and passes
the SDK's own tests. With the SDK's `CallModelData` it returns the SDK's `ModelInputData`, so it
also works as a filter of the SDK's runner.

How it combines with the history limits of [`SessionSettings`][turnstore.SessionSettings]: the
runner first loads the window of history that fits `limit`, `limit_turns` and `limit_tokens`
(estimated on the stored items, untrimmed), merges the new input, and then, before each model
call, passes the whole input through the filter. Trimming only shortens outputs, never removes an
item, so the trimmed input stays within the token budget and no call loses its output.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ..memory.history import is_user_message
from ..run_config import CallModelData, ModelInputData

__all__ = ["ToolOutputTrimmer"]


def _tool_call_names(item: Mapping[str, Any]) -> list[str]:
    """Candidate names of a function call: `namespace.name` (when namespaced), then `name`."""
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return []
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace and namespace != name:
        # A namespace equal to the name is the API's shape for a deferred top-level tool.
        return [f"{namespace}.{name}", name]
    return [name]


# Prose keywords worth dropping from a replayed schema: they cost tokens but the model can
# still call the tool without them.
_PROSE_SCHEMA_KEYWORDS = frozenset({"description", "title", "$comment", "examples"})

# Keywords whose value is itself a schema. Unknown keywords are intentionally not traversed:
# preserving unfamiliar data is safer than treating every nested mapping as a schema and
# accidentally deleting user-controlled values.
_SCHEMA_VALUE_KEYWORDS = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)

# Keywords whose value is a list of schemas.
_SCHEMA_LIST_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})

# Keywords whose value is a map keyed by user-chosen names and whose values are schemas.
_SCHEMA_MAP_KEYWORDS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)

# The legacy ``dependencies`` keyword is also name-keyed, but each value may be either a
# schema or a list of property names.
_SCHEMA_OR_PROPERTY_LIST_MAP_KEYWORDS = frozenset({"dependencies"})

_STRUCTURED_OUTPUT_FIELDS = {
    "input_text": frozenset({"type", "text"}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail"}),
    "input_file": frozenset({"type", "file_data", "file_url", "file_id", "filename"}),
}
_IMAGE_DETAILS = frozenset({"low", "high", "auto"})


@dataclass
class ToolOutputTrimmer:
    """A model-input filter that shortens large tool outputs of older turns.

    Use it when tools return bulky outputs (search results, logs, file contents) that cost
    tokens on every later model call. Pass it as `RunConfig(call_model_input_filter=...)`.
    Before each model call it replaces the large outputs of older turns with a short preview.
    The recent turns stay whole. The session keeps the full outputs: only what the model
    receives is trimmed. It never removes an item, so no tool call loses its output.

    It behaves as the OpenAI Agents SDK's `agents.extensions.ToolOutputTrimmer`, with the
    same arguments and previews, and also works as a filter of the SDK's runner.

    Attributes:
        recent_turns: How many of the latest turns are never trimmed. A turn is one user
            message and everything stored up to the next user message. At least 1.
            Defaults to 2.
        max_output_chars: Tool outputs longer than this many characters are trimmed.
            Structured outputs count only the text the model sees, and their previews fit
            within this size. Defaults to 500.
        preview_chars: How many characters of a trimmed output to keep as a preview (of the
            text parts, for a structured output). Defaults to 200.
        trimmable_tools: The tool name, or names, whose outputs may be trimmed. A namespaced
            tool matches its bare name or `namespace.name`. `None` (the default) trims the
            outputs of every tool.

    Raises:
        ValueError: `recent_turns` or `max_output_chars` is below 1, `preview_chars` is
            negative, or `trimmable_tools` is bytes.

    Example:
        ```python
        from turnstore import RunConfig, Runner
        from turnstore.extensions import ToolOutputTrimmer

        trimmer = ToolOutputTrimmer(recent_turns=2, trimmable_tools={"search"})
        config = RunConfig(call_model_input_filter=trimmer)
        result = await Runner.run(agent, "And now?", session=session, run_config=config)
        ```
    """

    # Adapted from the OpenAI Agents SDK's ToolOutputTrimmer (MIT licence, (c) OpenAI); it
    # passes the SDK's own tests. With the SDK's CallModelData it returns the SDK's
    # ModelInputData.

    recent_turns: int = 2
    max_output_chars: int = 500
    preview_chars: int = 200
    trimmable_tools: str | Iterable[str] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.recent_turns < 1:
            raise ValueError(f"recent_turns must be >= 1, got {self.recent_turns}")
        if self.max_output_chars < 1:
            raise ValueError(f"max_output_chars must be >= 1, got {self.max_output_chars}")
        if self.preview_chars < 0:
            raise ValueError(f"preview_chars must be >= 0, got {self.preview_chars}")
        # Coerce configured tool names to frozenset for immutability.
        if self.trimmable_tools is not None:
            if isinstance(self.trimmable_tools, str):
                trimmable_tools = frozenset({self.trimmable_tools})
            elif isinstance(self.trimmable_tools, bytes):
                raise ValueError("trimmable_tools must be a string or iterable of strings")
            elif isinstance(self.trimmable_tools, frozenset):
                trimmable_tools = self.trimmable_tools
            else:
                trimmable_tools = frozenset(self.trimmable_tools)
            object.__setattr__(self, "trimmable_tools", trimmable_tools)

    def __call__(self, data: CallModelData | Any) -> ModelInputData | Any:
        """Trim the large tool outputs of older turns in the input of one model call.

        The runner calls this before each model call; you do not call it yourself. The
        given items are not changed: trimmed items are copies.

        Args:
            data: The call's `CallModelData` (ours, or the OpenAI Agents SDK's).

        Returns:
            The input to send, as a `ModelInputData` of the same class as `data.model_data`
            (the given object itself when nothing is old enough to trim).
        """
        model_data = data.model_data
        items = model_data.input

        if not items:
            return model_data

        boundary = self._find_recent_boundary(items)
        if boundary == 0:
            return model_data

        call_id_to_names = self._build_call_id_to_names(items)

        new_items: list[Any] = []

        for i, item in enumerate(items):
            if i < boundary and isinstance(item, dict):
                item_dict = cast(dict[str, Any], item)
                item_type = item_dict.get("type")
                call_id = str(item_dict.get("call_id") or item_dict.get("id") or "")
                tool_names = call_id_to_names.get(
                    call_id,
                    ("tool_search",) if item_type == "tool_search_output" else (),
                )

                trimmable_tools = cast(frozenset[str] | None, self.trimmable_tools)
                if trimmable_tools is not None and not any(
                    candidate in trimmable_tools for candidate in tool_names
                ):
                    new_items.append(item)
                    continue

                trimmed_item: dict[str, Any] | None = None
                if item_type == "function_call_output":
                    trimmed_item, _ = self._trim_function_call_output(item_dict, tool_names)
                elif item_type == "tool_search_output":
                    trimmed_item, _ = self._trim_tool_search_output(item_dict)

                if trimmed_item is not None:
                    new_items.append(trimmed_item)
                    continue

            new_items.append(item)

        if dataclasses.is_dataclass(model_data) and not isinstance(model_data, type):
            return dataclasses.replace(model_data, input=new_items)
        return ModelInputData(input=new_items, instructions=model_data.instructions)

    def _find_recent_boundary(self, items: list[Any]) -> int:
        """Find the index separating 'old' items from 'recent' items.

        Walks backward through the items list counting user messages. Returns the index
        of the Nth user message from the end, where N = ``recent_turns``. Items at or
        after this index are considered recent and will not be trimmed.

        If there are fewer than N user messages, returns 0 (nothing is old).
        """
        user_msg_count = 0
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            if is_user_message(item):
                user_msg_count += 1
                if user_msg_count >= self.recent_turns:
                    return i
        return 0

    def _build_call_id_to_names(self, items: list[Any]) -> dict[str, tuple[str, ...]]:
        """Build a mapping from function call_id to candidate tool names."""
        mapping: dict[str, tuple[str, ...]] = {}
        for item in items:
            if isinstance(item, dict) and item.get("type") == "function_call":
                call_id = item.get("call_id")
                names = _tool_call_names(item)
                if call_id and names:
                    mapping[str(call_id)] = tuple(names)
            elif isinstance(item, dict) and item.get("type") == "tool_search_call":
                call_id = item.get("call_id") or item.get("id")
                if call_id:
                    mapping[str(call_id)] = ("tool_search",)
        return mapping

    def _trim_function_call_output(
        self,
        item: dict[str, Any],
        tool_names: tuple[str, ...],
    ) -> tuple[dict[str, Any] | None, int]:
        """Trim a function_call_output item when its serialized output is too large."""
        output = item.get("output", "")
        if isinstance(output, list):
            return self._trim_structured_function_call_output(item, output, tool_names)

        output_str = output if isinstance(output, str) else str(output)
        display_name = (tool_names[0] if tool_names else "") or "unknown_tool"
        summary = self._text_summary(display_name, output_str)
        if summary is None:
            return None, 0
        return {**item, "output": summary}, len(output_str) - len(summary)

    def _trim_structured_function_call_output(
        self,
        item: dict[str, Any],
        parts: list[Any],
        tool_names: tuple[str, ...],
    ) -> tuple[dict[str, Any] | None, int]:
        """Trim a canonical structured function output without previewing opaque payloads."""
        details = self._structured_output_details(parts)
        if details is None:
            return None, 0

        output_len, text_content, dropped_part_types = details
        if output_len <= self.max_output_chars:
            return None, 0

        display_name = (tool_names[0] if tool_names else "") or "unknown_tool"
        dropped_note = ""
        if dropped_part_types:
            dropped_note = "; dropped " + ", ".join(
                f"{count} {part_type}" for part_type, count in sorted(dropped_part_types.items())
            )

        minimal_header = "[Trimmed]"
        if self.max_output_chars < len(minimal_header):
            summary = minimal_header[: self.max_output_chars]
        else:
            preview_budget = self.max_output_chars - len(minimal_header) - 1
            preview_len = min(len(text_content), self.preview_chars, max(0, preview_budget))
            body = f"\n{text_content[:preview_len]}" if preview_len else ""
            if (
                preview_len < len(text_content)
                and len(minimal_header) + len(body) + len("...") <= self.max_output_chars
            ):
                body += "..."

            preview_note = f"; preview {preview_len}" if text_content else ""
            headers = [
                f"[Trimmed: {display_name}; payload {output_len}{preview_note}{dropped_note}]"
            ]
            if dropped_part_types:
                dropped_types = ", ".join(sorted(dropped_part_types))
                headers.extend(
                    [
                        f"[Trimmed: {display_name}{dropped_note}]",
                        f"[Trimmed{dropped_note}]",
                        f"[Trimmed: {dropped_types}]",
                        f"[Trimmed: dropped {sum(dropped_part_types.values())} opaque]",
                    ]
                )
            headers.extend(
                [
                    f"[Trimmed: payload {output_len}]",
                    f"[Trimmed: {display_name}]",
                    minimal_header,
                ]
            )
            summary = next(
                header + body
                for header in headers
                if len(header) + len(body) <= self.max_output_chars
            )

        return {**item, "output": summary}, output_len - len(summary)

    def _structured_output_details(
        self,
        parts: list[Any],
    ) -> tuple[int, str, dict[str, int]] | None:
        """Return payload size, readable text, and dropped-part counts for canonical parts."""
        if not parts:
            return None

        output_len = 0
        text_segments: list[str] = []
        dropped_part_types: dict[str, int] = {}

        for part in parts:
            if not isinstance(part, dict):
                return None

            part_type = part.get("type")
            if not isinstance(part_type, str):
                return None
            allowed_fields = _STRUCTURED_OUTPUT_FIELDS.get(part_type)
            if allowed_fields is None or not set(part).issubset(allowed_fields):
                return None
            if any(key != "type" and not isinstance(value, str) for key, value in part.items()):
                return None

            if part_type == "input_text":
                text = part.get("text")
                if not isinstance(text, str):
                    return None
                text_segments.append(text)
            elif part_type == "input_image":
                if not isinstance(part.get("image_url"), str) and not isinstance(
                    part.get("file_id"), str
                ):
                    return None
                if "detail" in part and part["detail"] not in _IMAGE_DETAILS:
                    return None
                dropped_part_types[part_type] = dropped_part_types.get(part_type, 0) + 1
            elif part_type == "input_file":
                if not any(
                    isinstance(part.get(field), str)
                    for field in ("file_data", "file_url", "file_id")
                ):
                    return None
                dropped_part_types[part_type] = dropped_part_types.get(part_type, 0) + 1

            output_len += sum(
                len(value)
                for key, value in part.items()
                if key != "type" and isinstance(value, str)
            )

        return output_len, "\n".join(text_segments), dropped_part_types

    def _trim_tool_search_output(self, item: dict[str, Any]) -> tuple[dict[str, Any] | None, int]:
        """Trim a tool_search_output item while keeping a valid replayable shape."""
        if isinstance(item.get("results"), list):
            return self._trim_legacy_tool_search_results(item)

        tools = item.get("tools")
        if not isinstance(tools, list):
            return None, 0

        original = self._serialize_json_like(tools)
        if len(original) <= self.max_output_chars:
            return None, 0

        trimmed_tools = [self._trim_tool_search_tool(tool) for tool in tools]
        trimmed = self._serialize_json_like(trimmed_tools)
        if len(trimmed) >= len(original):
            return None, 0

        return {**item, "tools": trimmed_tools}, len(original) - len(trimmed)

    def _trim_legacy_tool_search_results(
        self,
        item: dict[str, Any],
    ) -> tuple[dict[str, Any] | None, int]:
        """Trim legacy partial tool_search_output snapshots that still store free-text results."""
        serialized_results = self._serialize_json_like(item.get("results"))
        summary = self._text_summary("tool_search", serialized_results)
        if summary is None:
            return None, 0
        return {**item, "results": [{"text": summary}]}, len(serialized_results) - len(summary)

    def _text_summary(self, display_name: str, text: str) -> str | None:
        """The preview that replaces a too long `text`; `None` when it would not be shorter."""
        if len(text) <= self.max_output_chars:
            return None
        summary = (
            f"[Trimmed: {display_name} output — {len(text)} chars → "
            f"{self.preview_chars} char preview]\n{text[: self.preview_chars]}..."
        )
        return summary if len(summary) < len(text) else None

    def _trim_tool_search_tool(self, tool: Any) -> Any:
        """Recursively strip bulky descriptions and schema prose from tool search results."""
        if not isinstance(tool, dict):
            return tool

        trimmed_tool = dict(tool)
        if isinstance(trimmed_tool.get("description"), str):
            trimmed_tool["description"] = trimmed_tool["description"][: self.preview_chars]
            if len(tool["description"]) > self.preview_chars:
                trimmed_tool["description"] += "..."

        tool_type = trimmed_tool.get("type")
        if tool_type == "function" and isinstance(trimmed_tool.get("parameters"), dict):
            trimmed_tool["parameters"] = self._trim_json_schema(trimmed_tool["parameters"])
        elif tool_type == "namespace" and isinstance(trimmed_tool.get("tools"), list):
            trimmed_tool["tools"] = [
                self._trim_tool_search_tool(nested_tool) for nested_tool in trimmed_tool["tools"]
            ]

        return trimmed_tool

    def _trim_json_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Remove verbose prose from a JSON schema while preserving its structure."""
        trimmed_schema: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _PROSE_SCHEMA_KEYWORDS:
                continue
            if key in _SCHEMA_VALUE_KEYWORDS:
                if isinstance(value, dict):
                    trimmed_schema[key] = self._trim_json_schema(value)
                elif key == "items" and isinstance(value, list):
                    trimmed_schema[key] = [
                        self._trim_json_schema(item) if isinstance(item, dict) else item
                        for item in value
                    ]
                else:
                    trimmed_schema[key] = value
                continue
            if key in _SCHEMA_LIST_KEYWORDS and isinstance(value, list):
                trimmed_schema[key] = [
                    self._trim_json_schema(item) if isinstance(item, dict) else item
                    for item in value
                ]
                continue
            if key in _SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
                trimmed_schema[key] = {
                    name: self._trim_json_schema(sub) if isinstance(sub, dict) else sub
                    for name, sub in value.items()
                }
                continue
            if key in _SCHEMA_OR_PROPERTY_LIST_MAP_KEYWORDS and isinstance(value, dict):
                trimmed_schema[key] = {
                    name: self._trim_json_schema(dependency)
                    if isinstance(dependency, dict)
                    else dependency
                    for name, dependency in value.items()
                }
                continue
            trimmed_schema[key] = value
        return trimmed_schema

    def _serialize_json_like(self, value: Any) -> str:
        """Serialize structured tool output for sizing comparisons."""
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except Exception:
            return str(value)
