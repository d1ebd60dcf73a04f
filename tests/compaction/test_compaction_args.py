"""`run_compaction` rejects flags that are not bools instead of reading them as truthy."""

from __future__ import annotations

from typing import Any

import pytest

from turnstore import OpenAIResponsesCompactionSession, SQLiteSession
from turnstore.testing import FakeCompactionAPI, FakeOpenAIServer


@pytest.mark.parametrize("args", [{"force": "yes"}, {"store": "no"}, {"force": 1}])
async def test_non_bool_flags_are_a_type_error_and_call_nothing(
    fake_openai: FakeOpenAIServer, args: dict[str, Any]
) -> None:
    FakeCompactionAPI().install(fake_openai)
    async with fake_openai.async_client() as client, SQLiteSession("s") as store:
        session = OpenAIResponsesCompactionSession("s", store, client=client)
        await session.add_items([{"role": "user", "content": "hi"}])
        with pytest.raises(TypeError, match="must be True or False"):
            await session.run_compaction(args)  # type: ignore[arg-type]
        assert fake_openai.requests == []
        assert await store.get_items() == [{"role": "user", "content": "hi"}]
