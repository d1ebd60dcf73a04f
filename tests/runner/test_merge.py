"""The pure merge of history and new input, and the conversion of items."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

from turnstore import UserError
from turnstore.conversion import clean_input_item, input_items_from, output_item_to_input_item
from turnstore.items import OUTPUT_TYPE_OF_CALL
from turnstore.session_input import drop_orphan_tool_outputs, merge_session_input

H = [{"role": "user", "content": "h1"}, {"role": "assistant", "content": "a1"}]
N = [{"role": "user", "content": "new"}]


async def test_default_merge_is_history_then_new_and_saves_only_new() -> None:
    merged = await merge_session_input(copy.deepcopy(H), copy.deepcopy(N))
    assert merged.model_input == H + N
    assert merged.to_save == N


async def test_callback_made_up_items_are_saved_and_repeated_new_saved_once() -> None:
    def cb(history: list[Any], new: list[Any]) -> list[Any]:
        return [{"role": "system", "content": "note"}, *new, *new, *history]

    merged = await merge_session_input(H, N, cb)
    assert merged.to_save == [{"role": "system", "content": "note"}, *N]
    assert len(merged.model_input) == 5


async def test_callback_rebuilding_the_new_input_still_saves_it() -> None:
    def cb(history: list[Any], new: list[Any]) -> list[Any]:
        return [dict(item) for item in new]  # new objects, equal content

    merged = await merge_session_input(H, N, cb)
    assert merged.to_save == N


async def test_new_input_equal_to_a_history_item_is_still_saved() -> None:
    repeated = [{"role": "user", "content": "h1"}]
    merged = await merge_session_input(H, repeated, lambda h, n: h + n)
    assert merged.to_save == repeated


async def test_bad_callbacks() -> None:
    with pytest.raises(UserError, match="must be a function"):
        await merge_session_input(H, N, "nope")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="not dict"):
        await merge_session_input(H, N, lambda h, n: {"x": 1})  # type: ignore[arg-type,return-value]


def test_orphan_outputs_are_dropped_and_matched_pairs_kept() -> None:
    items: list[Any] = [
        {"type": "function_call_output", "call_id": "gone", "output": "x"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "y"},
        {"type": "custom_tool_call_output", "call_id": "gone2", "output": "z"},
        {"role": "user", "content": "hi"},
    ]
    assert drop_orphan_tool_outputs(items) == items[1:3] + items[4:]


def test_every_paired_tool_type_drops_its_orphan_output() -> None:
    # The same pairing table as compaction: each output type without its call is dropped.
    for call_type, output_type in OUTPUT_TYPE_OF_CALL.items():
        call = {"type": call_type, "call_id": "kept"}
        kept = {"type": output_type, "call_id": "kept"}
        orphan = {"type": output_type, "call_id": "gone"}
        items: list[Any] = [orphan, call, kept]
        assert drop_orphan_tool_outputs(items) == [call, kept], call_type


def test_output_items_become_input_items() -> None:
    message = ResponseOutputMessage.construct(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[{"type": "output_text", "text": "hi", "annotations": []}],
    )
    assert output_item_to_input_item(message) == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    }
    call = ResponseFunctionToolCall(
        type="function_call", call_id="c", name="f", arguments="{}", id="fc"
    )
    assert output_item_to_input_item(call) == {
        "type": "function_call",
        "call_id": "c",
        "name": "f",
        "arguments": "{}",
        "id": "fc",
    }
    assert output_item_to_input_item({"type": "x", "created_by": "server"}) == {"type": "x"}


def test_cleaning_and_input_coercion() -> None:
    stored = {"type": "function_call", "call_id": "c", "_agents_tool_title": "T", "created_by": "s"}
    assert clean_input_item(stored) == {"type": "function_call", "call_id": "c"}
    assert input_items_from("hi") == [{"role": "user", "content": "hi"}]
    with pytest.raises(TypeError, match="input item 1 must be a dict"):
        input_items_from([{"role": "user", "content": "a"}, "b"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not int"):
        input_items_from(3)  # type: ignore[arg-type]
