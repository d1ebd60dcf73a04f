"""The pure rules: what counts towards the trigger, and where a history may be cut."""

from __future__ import annotations

from typing import Any

from turnstore.memory.openai.compaction_items import (
    compactable_prefix_length,
    ends_with_model_output,
    normalize_compacted_output,
    select_compaction_candidate_items,
)

from .conftest import assistant, call, output, user


def test_candidates_exclude_user_messages_and_compaction_items() -> None:
    items = [
        user("a"),
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "b"}]},
        {"type": "compaction", "encrypted_content": "x"},
        assistant("c"),
        call("1"),
        output("1"),
        {"type": "reasoning", "summary": []},
    ]
    assert select_compaction_candidate_items(items) == items[3:]


def test_closed_history_is_fully_compactable() -> None:
    items = [user("q"), call("1"), output("1"), assistant("done")]
    assert compactable_prefix_length(items) == 4


def test_pending_call_and_everything_after_it_is_kept() -> None:
    items = [user("q"), assistant("a"), call("1"), user("more"), assistant("b")]
    assert compactable_prefix_length(items) == 2


def test_reasoning_stays_with_the_item_after_it() -> None:
    items = [user("q"), assistant("a"), {"type": "reasoning", "summary": []}, call("1")]
    assert compactable_prefix_length(items) == 2


def test_interleaved_calls_cut_before_the_earliest_open_one() -> None:
    items = [user("q"), call("1"), call("2"), output("2"), assistant("a")]
    assert compactable_prefix_length(items) == 1
    items.append(output("1"))
    assert compactable_prefix_length(items) == 6


def test_other_tool_kinds_pair_by_call_id() -> None:
    items: list[Any] = [
        user("q"),
        {"type": "shell_call", "call_id": "s", "action": {}},
        {"type": "shell_call_output", "call_id": "s", "output": []},
        {"type": "custom_tool_call", "call_id": "c", "name": "t", "input": ""},
    ]
    assert compactable_prefix_length(items) == 3
    items.append({"type": "custom_tool_call_output", "call_id": "c", "output": "ok"})
    assert compactable_prefix_length(items) == 5


def test_mcp_approval_request_waits_for_its_response() -> None:
    request = {"type": "mcp_approval_request", "id": "apr_1", "name": "t", "arguments": "{}"}
    items: list[Any] = [user("q"), request, assistant("waiting")]
    assert compactable_prefix_length(items) == 1
    items.append({"type": "mcp_approval_response", "approval_request_id": "apr_1", "approve": True})
    assert compactable_prefix_length(items) == 4


def test_server_side_tool_search_needs_no_output() -> None:
    items: list[Any] = [
        user("q"),
        {"type": "tool_search_call", "call_id": "t", "arguments": {}, "execution": "server"},
    ]
    assert compactable_prefix_length(items) == 2
    items[1]["execution"] = "client"
    assert compactable_prefix_length(items) == 1


def test_normalize_drops_assistant_ids_without_reasoning() -> None:
    out = normalize_compacted_output(
        [
            {**assistant("x"), "id": "msg_1"},
            {"type": "compaction", "id": "c", "encrypted_content": "e"},
        ]
    )
    assert "id" not in out[0]
    assert out[1]["id"] == "c"  # type: ignore[typeddict-item]
    with_reasoning = normalize_compacted_output(
        [{"type": "reasoning", "id": "rs", "summary": []}, {**assistant("x"), "id": "msg_1"}]
    )
    assert with_reasoning[1]["id"] == "msg_1"  # type: ignore[typeddict-item]


def test_ends_with_model_output() -> None:
    assert ends_with_model_output([user("q"), assistant("a")])
    assert ends_with_model_output([user("q"), call("1")])
    assert ends_with_model_output([user("q"), {"type": "reasoning", "summary": []}])
    assert not ends_with_model_output([])
    assert not ends_with_model_output([user("q")])
    assert not ends_with_model_output([call("1"), output("1")])
    assert not ends_with_model_output([{"type": "compaction", "encrypted_content": "x"}])
    assert not ends_with_model_output([{"role": "developer", "content": "be brief"}])
