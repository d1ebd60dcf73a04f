"""Item types shared by sessions and the runner.

Items are the OpenAI Responses API input items, so a history stored by turnstore can be
passed to `client.responses.create(input=...)` as it is, and exchanged with the OpenAI Agents SDK.
"""

from __future__ import annotations

from typing import TypeAlias

from openai.types.responses import ResponseInputItemParam

__all__ = ["OUTPUT_TYPE_OF_CALL", "TResponseInputItem"]

TResponseInputItem: TypeAlias = ResponseInputItemParam
"""One Responses API input item: a message, a function call, a function call output, a reasoning
item, a compaction item, and so on. At run time it is a plain `dict`."""

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
