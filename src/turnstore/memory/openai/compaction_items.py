"""Pure item logic for compaction: which items count, and where a history may be cut.

No I/O lives here;
[`OpenAIResponsesCompactionSession`][turnstore.OpenAIResponsesCompactionSession] uses these
functions to decide when to compact and how much of the history it may replace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ...items import OUTPUT_TYPE_OF_CALL

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = [
    "compactable_prefix_length",
    "ends_with_model_output",
    "is_compaction_candidate",
    "normalize_compacted_output",
    "select_compaction_candidate_items",
]


def _fields(item: TResponseInputItem) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], item) if isinstance(item, Mapping) else {}


def _is_user_message(item: TResponseInputItem) -> bool:
    fields = _fields(item)
    return fields.get("role") == "user" and fields.get("type", "message") == "message"


def is_compaction_candidate(item: TResponseInputItem) -> bool:
    """Tell whether an item counts towards the default compaction trigger.

    Args:
        item: Any stored item.

    Returns:
        `False` for user messages and compaction items (compacting does not shrink those), `True`
        for everything else: assistant messages, tool calls and outputs, reasoning, and so on.
    """
    return not (_is_user_message(item) or _fields(item).get("type") == "compaction")


def select_compaction_candidate_items(
    items: Sequence[TResponseInputItem],
) -> list[TResponseInputItem]:
    """Return the items that count towards the compaction trigger, in order.

    Args:
        items: A stored history, oldest first.

    Returns:
        The items for which `is_compaction_candidate` is true.
    """
    return [item for item in items if is_compaction_candidate(item)]


def _pending_pairs(items: Sequence[TResponseInputItem]) -> list[tuple[int, int]]:
    """Return (call index, output index) per call; a missing output has index len(items)."""
    open_calls: dict[tuple[str, str], int] = {}
    pairs: list[tuple[int, int]] = []
    for index, item in enumerate(items):
        fields = _fields(item)
        kind = fields.get("type")
        if kind == "mcp_approval_request" and isinstance(fields.get("id"), str):
            open_calls[("mcp_approval_response", fields["id"])] = index
            continue
        if kind == "mcp_approval_response" and isinstance(fields.get("approval_request_id"), str):
            start = open_calls.pop(("mcp_approval_response", fields["approval_request_id"]), None)
            if start is not None:
                pairs.append((start, index))
            continue
        call_id = fields.get("call_id")
        if not isinstance(call_id, str) or not isinstance(kind, str):
            continue
        if kind in OUTPUT_TYPE_OF_CALL:
            if kind == "tool_search_call" and fields.get("execution") != "client":
                continue  # the server runs it and returns its output in the same response
            open_calls[(OUTPUT_TYPE_OF_CALL[kind], call_id)] = index
        else:
            start = open_calls.pop((kind, call_id), None)
            if start is not None:
                pairs.append((start, index))
    pairs.extend((start, len(items)) for start in open_calls.values())
    return pairs


def compactable_prefix_length(items: Sequence[TResponseInputItem]) -> int:
    """Return how many leading items can be compacted without breaking a tool call.

    The prefix `items[:n]` never separates a call (function, custom tool, computer, shell,
    apply-patch, program, client tool search, MCP approval request) from its output, never
    contains a call whose output has not arrived yet, and never ends with a reasoning item
    (which belongs to the item after it). Everything from `n` on must be kept as it is.

    Args:
        items: A stored history, oldest first.

    Returns:
        `n`, between 0 and `len(items)`.

    Example:
        ```python
        history = [user, call_a, output_a, assistant, call_b]  # call_b has no output yet
        assert compactable_prefix_length(history) == 4
        ```
    """
    pairs = _pending_pairs(items)
    end = len(items)
    changed = True
    while changed:
        changed = False
        for call, output in pairs:
            if call < end <= output:
                end = call
                changed = True
        while end > 0 and _fields(items[end - 1]).get("type") == "reasoning":
            end -= 1
            changed = True
    return end


_NOT_MODEL_OUTPUT = {*OUTPUT_TYPE_OF_CALL.values(), "mcp_approval_response", "compaction"}


def ends_with_model_output(items: Sequence[TResponseInputItem]) -> bool:
    """Tell whether the newest item is one a model produced.

    A response's stored chain (its input and output) ends with the model's output; a history
    whose newest item is a tool output, an approval, a compaction item, or a user, system or
    developer message holds something the latest response has not seen.

    Args:
        items: A stored history, oldest first.

    Returns:
        `True` when `items` is not empty and its newest item came from the model.
    """
    if not items:
        return False
    fields = _fields(items[-1])
    if fields.get("type", "message") == "message":
        return fields.get("role") == "assistant"
    return fields.get("type") not in _NOT_MODEL_OUTPUT


def _dump(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    # `warnings=False`: compacted user messages use input content in an output message model.
    return cast(dict[str, Any], item.model_dump(exclude_unset=True, warnings=False))


def normalize_compacted_output(output: Sequence[Any]) -> list[TResponseInputItem]:
    """Turn the output of `responses.compact` into items that can be sent back as input.

    The items become plain dicts with only the fields the API sent. When the output holds no
    reasoning item, assistant messages lose their `id`: an assistant message id refers to a
    reasoning item, and the Responses API rejects the id when that item is missing.

    Args:
        output: `CompactedResponse.output`.

    Returns:
        The items to store, in order.
    """
    items = [_dump(item) for item in output]
    if not any(item.get("type") == "reasoning" for item in items):
        items = [
            {k: v for k, v in item.items() if k != "id"}
            if item.get("role") == "assistant" and item.get("type", "message") == "message"
            else item
            for item in items
        ]
    return [cast("TResponseInputItem", item) for item in items]
