"""The tools for writing a session backend.

An application imports its sessions from `turnstore` (`SQLiteSession`, `Session`,
`SessionSettings`) and from `turnstore.extensions.memory` (the SDK's extension sessions). A
backend author finds here: the base class [`SessionABC`][turnstore.memory.SessionABC]; the
optional protocols a backend may implement and their type guards
([`AtomicReplacementSession`][turnstore.memory.AtomicReplacementSession],
[`UsageRecordingSession`][turnstore.memory.UsageRecordingSession],
[`OpenAIResponsesCompactionAwareSession`][turnstore.memory.OpenAIResponsesCompactionAwareSession]
with its [`OpenAIResponsesCompactionArgs`][turnstore.memory.OpenAIResponsesCompactionArgs]);
[`HistorySnapshot`][turnstore.memory.HistorySnapshot],
[`await_session_mutation`][turnstore.memory.await_session_mutation],
[`resolve_session_limit`][turnstore.memory.resolve_session_limit],
[`SessionSettingsLike`][turnstore.memory.SessionSettingsLike] (the type of a `session_settings`
argument), and the helpers that read a
history as a run would ([`load_history`][turnstore.memory.load_history],
[`estimate_item_tokens`][turnstore.memory.estimate_item_tokens]).
"""

from __future__ import annotations

from .history import estimate_item_tokens, load_history
from .mutation import await_session_mutation
from .session import (
    AtomicReplacementSession,
    HistorySnapshot,
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    SessionABC,
    UsageRecordingSession,
    is_atomic_replacement_session,
    is_openai_responses_compaction_aware_session,
    is_usage_recording_session,
)
from .settings import SessionSettingsLike, resolve_session_limit

__all__ = [
    "AtomicReplacementSession",
    "HistorySnapshot",
    "OpenAIResponsesCompactionArgs",
    "OpenAIResponsesCompactionAwareSession",
    "SessionABC",
    "SessionSettingsLike",
    "UsageRecordingSession",
    "await_session_mutation",
    "estimate_item_tokens",
    "is_atomic_replacement_session",
    "is_openai_responses_compaction_aware_session",
    "is_usage_recording_session",
    "load_history",
    "resolve_session_limit",
]
