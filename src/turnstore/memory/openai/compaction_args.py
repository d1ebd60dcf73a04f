"""The arguments of compaction: modes, the trigger and its context, the `run_compaction` args.

Pure checks, no I/O; `compaction.py` holds the session that uses them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Literal, get_args

from typing_extensions import TypedDict

from ..session import OpenAIResponsesCompactionArgs

if TYPE_CHECKING:
    from ...items import TResponseInputItem

__all__ = [
    "DEFAULT_COMPACTION_THRESHOLD",
    "MODES",
    "CompactionMode",
    "CompactionTrigger",
    "CompactionTriggerContext",
    "check_args",
    "default_trigger",
]

DEFAULT_COMPACTION_THRESHOLD = 10
"""The default trigger compacts once this many candidate items have accumulated."""

CompactionMode = Literal["previous_response_id", "input", "auto"]
MODES = get_args(CompactionMode)


class CompactionTriggerContext(TypedDict):
    """What a custom `should_trigger_compaction` callable receives.

    Attributes:
        response_id: The latest response id the session knows, or `None`.
        compaction_mode: The mode this compaction would use, `"auto"` already resolved.
        compaction_candidate_items: The stored items that are neither user messages nor
            compaction items, oldest first.
        session_items: The whole stored history, oldest first, as written through the session
            (items written to the wrapped session directly appear after its next read).
    """

    response_id: str | None
    compaction_mode: Literal["previous_response_id", "input"]
    compaction_candidate_items: list[TResponseInputItem]
    session_items: list[TResponseInputItem]


CompactionTrigger = Callable[[CompactionTriggerContext], "bool | Awaitable[bool]"]


def default_trigger(context: CompactionTriggerContext) -> bool:
    """The default trigger: compact once `DEFAULT_COMPACTION_THRESHOLD` candidates are stored."""
    return len(context["compaction_candidate_items"]) >= DEFAULT_COMPACTION_THRESHOLD


def check_args(
    args: OpenAIResponsesCompactionArgs | None, default_mode: CompactionMode
) -> OpenAIResponsesCompactionArgs:
    """Check the arguments of `run_compaction`, changing nothing.

    Returns:
        `args`, or `{}` for `None`.

    Raises:
        TypeError: `args` is not a dict, has an unknown key, or a flag is not a bool.
        ValueError: `compaction_mode` or `response_id` is invalid.
    """
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise TypeError(f"run_compaction args must be a dict or None, got {type(args).__name__}")
    unknown = set(args) - set(OpenAIResponsesCompactionArgs.__annotations__)
    if unknown:
        raise TypeError(f"unknown run_compaction argument(s): {', '.join(sorted(unknown))}")
    mode = args.get("compaction_mode", default_mode)
    if mode not in MODES:
        raise ValueError(
            f"compaction_mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}"
        )
    for flag in ("store", "force"):
        if flag in args and not isinstance(args[flag], bool):
            value = args[flag]
            raise TypeError(f"run_compaction {flag!r} must be True or False, got {value!r}")
    response_id = args.get("response_id")
    if response_id is not None and (not isinstance(response_id, str) or not response_id):
        raise ValueError(f"response_id must be a non-empty string, got {response_id!r}")
    return args
