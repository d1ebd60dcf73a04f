"""The Session protocol, SessionABC and the compaction type guard."""

from __future__ import annotations

from typing import Any

import pytest

from turnstore import Session, SQLiteSession
from turnstore.memory import (
    OpenAIResponsesCompactionArgs,
    OpenAIResponsesCompactionAwareSession,
    SessionABC,
    is_openai_responses_compaction_aware_session,
)


class DuckSession:
    """Matches the protocol without inheriting anything."""

    def __init__(self) -> None:
        self.session_id = "duck"
        self.session_settings = None
        self.items: list[Any] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return self.items if limit is None else self.items[len(self.items) - limit :]

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


class CompactingDuck(DuckSession):
    async def run_compaction(self, args: OpenAIResponsesCompactionArgs | None = None) -> None:
        return None


def test_structural_match_is_a_session() -> None:
    assert isinstance(DuckSession(), Session)
    sqlite = SQLiteSession("x")
    assert isinstance(sqlite, Session)
    sqlite.close()
    assert not isinstance(object(), Session)


def test_missing_method_is_not_a_session() -> None:
    class NoPop:
        session_id = "x"
        session_settings = None

        async def get_items(self, limit: int | None = None) -> list[Any]:
            return []

        async def add_items(self, items: list[Any]) -> None:
            pass

        async def clear_session(self) -> None:
            pass

    assert not isinstance(NoPop(), Session)


def test_session_abc_requires_all_four_methods() -> None:
    class Partial(SessionABC):
        async def get_items(self, limit: int | None = None) -> list[Any]:
            return []

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]

    class Complete(Partial):
        async def add_items(self, items: list[Any]) -> None:
            pass

        async def pop_item(self) -> Any:
            return None

        async def clear_session(self) -> None:
            pass

    complete = Complete()
    complete.session_id = "c"
    assert complete.session_settings is None
    assert isinstance(complete, Session)


def test_compaction_type_guard() -> None:
    assert is_openai_responses_compaction_aware_session(CompactingDuck())
    assert isinstance(CompactingDuck(), OpenAIResponsesCompactionAwareSession)
    assert not is_openai_responses_compaction_aware_session(DuckSession())
    assert not is_openai_responses_compaction_aware_session(None)
    sqlite = SQLiteSession("x")
    assert not is_openai_responses_compaction_aware_session(sqlite)
    sqlite.close()


def test_compaction_type_guard_is_false_when_attribute_access_raises() -> None:
    class Exploding(DuckSession):
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(f"cannot read {name}")

    class ExplodingProperty(DuckSession):
        @property
        def run_compaction(self) -> Any:
            raise ValueError("boom")

    assert not is_openai_responses_compaction_aware_session(Exploding())
    assert not is_openai_responses_compaction_aware_session(ExplodingProperty())


def test_non_callable_run_compaction_is_not_compaction_aware() -> None:
    duck = DuckSession()
    duck.run_compaction = "not callable"  # type: ignore[attr-defined]
    assert not is_openai_responses_compaction_aware_session(duck)


def test_compaction_args_typed_dict_is_total_false() -> None:
    args: OpenAIResponsesCompactionArgs = {"force": True}
    assert args == {"force": True}
    assert OpenAIResponsesCompactionArgs.__total__ is False
    assert set(OpenAIResponsesCompactionArgs.__annotations__) == {
        "response_id",
        "compaction_mode",
        "store",
        "force",
    }
