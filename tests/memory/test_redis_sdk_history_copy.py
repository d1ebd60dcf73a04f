"""The script on the migration page (docs/from_agents_sdk.md) that copies the Redis history the
OpenAI Agents SDK's `RedisSession` stored into turnstore's `RedisSession`, run as it is printed,
on a real Redis, with history the SDK itself wrote."""

from __future__ import annotations

import re
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from support.backends import delete_prefix, unique_prefix
from turnstore.extensions.memory import RedisSession

pytestmark = pytest.mark.services

PAGE = Path(__file__).resolve().parents[2] / "docs" / "from_agents_sdk.md"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)

HISTORIES: dict[str, list[dict[str, Any]]] = {
    "user-1": [
        {"role": "user", "content": "What is the weather in Tokyo?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Tokyo"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 C"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Sunny, 21 C."}]},
    ],
    "tenant:7:ユーザー": [  # colons and non-ASCII in the id
        {"role": "user", "content": "héllo 😀"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
    ],
    "ends:messages": [{"role": "user", "content": "an id ending as the SDK's key does"}],
}


def copy_script() -> dict[str, Any]:
    """Run the page's script (its `main()` stays uncalled) and return what it defines."""
    blocks = [
        textwrap.dedent(match["code"])
        for match in FENCE.finditer(PAGE.read_text(encoding="utf-8"))
        if "async def copy_sdk_history" in match["code"]
    ]
    assert len(blocks) == 1, "the page shows the script once"
    namespace: dict[str, Any] = {"__name__": "from_agents_sdk_example"}
    exec(compile(blocks[0], str(PAGE), "exec"), namespace)
    return namespace


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    # As the script's main() makes it: decoded responses.
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def prefixes(client: Redis) -> AsyncIterator[tuple[str, str]]:
    sdk_prefix, our_prefix = unique_prefix("sdk"), unique_prefix("ours")
    yield sdk_prefix, our_prefix
    await delete_prefix(client, sdk_prefix)
    await delete_prefix(client, our_prefix)


async def test_the_page_script_copies_the_sdks_redis_history_once(
    client: Redis, prefixes: tuple[str, str]
) -> None:
    from agents.extensions.memory import RedisSession as SDKRedisSession

    sdk_prefix, our_prefix = prefixes
    for session_id, items in HISTORIES.items():
        sdk = SDKRedisSession(session_id, redis_client=client, key_prefix=sdk_prefix)
        await sdk.add_items(items[:1])  # two writes, as two turns of a run would make
        await sdk.add_items(items[1:])

    def ours(session_id: str) -> RedisSession:
        return RedisSession(session_id, redis_client=client, key_prefix=our_prefix)

    # What the page warns about: turnstore does not read the SDK's keys.
    assert await ours("user-1").get_items() == []

    copy_sdk_history: Callable[..., Any] = copy_script()["copy_sdk_history"]
    assert await copy_sdk_history(client, sdk_prefix, key_prefix=our_prefix) == len(HISTORIES)
    for session_id, items in HISTORIES.items():
        assert await ours(session_id).get_items() == items, session_id

    # A second run copies nothing twice.
    assert await copy_sdk_history(client, sdk_prefix, key_prefix=our_prefix) == 0
    for session_id, items in HISTORIES.items():
        assert await ours(session_id).get_items() == items, session_id

    # The SDK's keys stay, and the SDK still reads them.
    for session_id, items in HISTORIES.items():
        sdk = SDKRedisSession(session_id, redis_client=client, key_prefix=sdk_prefix)
        assert await sdk.get_items() == items, session_id


async def test_a_session_turnstore_already_holds_is_left_as_it_is(
    client: Redis, prefixes: tuple[str, str]
) -> None:
    from agents.extensions.memory import RedisSession as SDKRedisSession

    sdk_prefix, our_prefix = prefixes
    await SDKRedisSession("a", redis_client=client, key_prefix=sdk_prefix).add_items(
        [{"role": "user", "content": "from the SDK"}]
    )
    already = [{"role": "user", "content": "written by turnstore"}]
    await RedisSession("a", redis_client=client, key_prefix=our_prefix).add_items(already)

    copy_sdk_history = copy_script()["copy_sdk_history"]
    assert await copy_sdk_history(client, sdk_prefix, key_prefix=our_prefix) == 0
    assert await RedisSession("a", redis_client=client, key_prefix=our_prefix).get_items() == (
        already
    )
