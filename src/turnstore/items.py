"""Item types shared by sessions and the runner.

Items are the OpenAI Responses API input items, so a history stored by turnstore can be
passed to `client.responses.create(input=...)` as it is, and exchanged with the OpenAI Agents SDK.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast

__all__ = ["OUTPUT_ONLY_KEYS", "OUTPUT_TYPE_OF_CALL", "TResponseInputItem", "clean_input_item"]

# The alias is imported on first use (`__getattr__` below), so that storing sessions does
# not import openai: modules that must not import it import the alias under `if TYPE_CHECKING:`
# (their annotations are not evaluated) and write `cast("TResponseInputItem", ...)`.
if TYPE_CHECKING:
    from openai.types.responses import ResponseInputItemParam

    TResponseInputItem: TypeAlias = ResponseInputItemParam
    """One Responses API input item: a message, a function call, a function call output, a
    reasoning item, a compaction item, and so on. At run time it is a plain `dict`.

    It is the `openai` package's own `ResponseInputItemParam`, imported on first use:
    `import turnstore` alone does not import `openai`.
    """

OUTPUT_TYPE_OF_CALL: dict[str, str] = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "program": "program_output",
    "tool_search_call": "tool_search_output",
}
"""Tool call item types whose result comes back as a separate item, mapped to that item's type.

The call and its output share a `call_id`; the Responses API rejects an output whose call is not in
the input. The runner (dropping orphaned outputs) and compaction (never separating a call from its
output) both pair items through this one table."""

OUTPUT_ONLY_KEYS = ("created_by",)
"""Output-only fields that the Responses API rejects in input items."""


def clean_input_item(item: Mapping[str, Any]) -> TResponseInputItem:
    """Return a copy of a stored item without keys the Responses API does not accept.

    Drops output-only fields (`created_by`) and private bookkeeping keys that start with `_`
    (the OpenAI Agents SDK stores, for example, `_agents_tool_title` on tool calls).

    Args:
        item: A stored input item.

    Returns:
        A deep copy fit to send to the model.
    """
    return cast(
        "TResponseInputItem",
        {
            key: copy.deepcopy(value)
            for key, value in item.items()
            if not key.startswith("_") and key not in OUTPUT_ONLY_KEYS
        },
    )


if not TYPE_CHECKING:  # type checkers see the alias above

    def __getattr__(name: str) -> Any:
        if name != "TResponseInputItem":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from openai.types.responses import ResponseInputItemParam

        return ResponseInputItemParam
