"""RedisSession on a real 3-primary Redis Cluster, and the key layouts of one Redis and a cluster.

The shared behaviour runs as `TestRedisClusterConformance`; the load test and the CLI round trip
run on the cluster too (tests/memory/test_backends_load.py, tests/cli).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from support.backends import delete_prefix, unique_prefix
from support.waiting import eventually
from turnstore import Session, SessionStorageError
from turnstore.admin import SessionRecord, open_session_store
from turnstore.extensions.memory import RedisSession
from turnstore.memory.redis.keys import ClusterLayout, SingleNodeLayout, slot_tag
from turnstore.testing import SessionConformanceTests

pytestmark = pytest.mark.services

ODD_IDS = ["s", "user-42", "a{b}c", "}{", "{}", "héllo 😀", "x" * 300, "o'hara; DROP TABLE x"]


def slot(key: str) -> int:
    return key_slot(key.encode())


def test_every_hash_slot_has_an_index_tag() -> None:
    for wanted in range(REDIS_CLUSTER_HASH_SLOTS):
        tag = slot_tag(wanted)
        assert slot(f"p:index:{{{tag}}}") == wanted
        assert "{" not in tag
        assert "}" not in tag


@pytest.mark.parametrize("session_id", ODD_IDS)
def test_a_sessions_keys_share_one_slot_on_a_cluster(session_id: str) -> None:
    layout = ClusterLayout("agent_sessions")
    items, index = layout.items_key(session_id), layout.index_key(session_id)
    if "}" not in session_id:
        assert items == f"agent_sessions:items:{{{session_id}}}"
    assert slot(items) == slot(index)


def test_the_hash_tag_is_the_whole_session_id() -> None:
    """An id holding braces is placed by all of it, not by the text before its first `}`."""
    layout = ClusterLayout("agent_sessions")
    for ids in (
        [f"tenant}}{n}" for n in range(64)],
        [f"{{tenant}}{n}" for n in range(64)],
        [f"}}{n}" for n in range(64)],
    ):
        keys = [layout.items_key(i) for i in ids]
        assert len({slot(key) for key in keys}) > 32, ids[:2]
    ids = [*ODD_IDS, "", "a", "a}", "a}b", "}", "{a}", "{a", "{{}}", "a}b}c"]
    keys = [layout.items_key(i) for i in ids]
    assert len(set(keys)) == len(ids)  # one key per id
    for session_id, key in zip(ids, keys, strict=True):
        assert slot(key) == slot(layout.index_key(session_id))


def test_a_prefix_with_braces_is_refused_on_a_cluster() -> None:
    with pytest.raises(ValueError, match="must not contain"):
        ClusterLayout("app{1}")
    assert SingleNodeLayout("app{1}").items_key("s") == "app{1}:items:s"  # one Redis: allowed


@pytest.fixture
async def cluster(redis_cluster_url: str) -> AsyncIterator[RedisCluster]:
    client = RedisCluster.from_url(redis_cluster_url.replace("redis+cluster://", "redis://"))
    yield client
    await client.aclose()


@pytest.fixture
async def prefix(cluster: RedisCluster) -> AsyncIterator[str]:
    prefix = unique_prefix("ctest")
    yield prefix
    await delete_prefix(cluster, prefix)


async def test_ids_with_braces_spread_over_every_primary(
    cluster: RedisCluster, prefix: str
) -> None:
    ids = [f"tenant}}{n}" for n in range(30)]
    for n, session_id in enumerate(ids):
        await RedisSession(session_id, redis_client=cluster, key_prefix=prefix).add_items(
            [{"n": n}]
        )
    await cluster.initialize()
    owners = {cluster.get_node_from_key(ClusterLayout(prefix).items_key(i)).name for i in ids}
    assert len(owners) == 3
    for n, session_id in enumerate(ids):
        session = RedisSession(session_id, redis_client=cluster, key_prefix=prefix)
        assert await session.get_items() == [{"n": n}]
    async with open_session_store(cluster_url(cluster), key_prefix=prefix) as store:
        assert sorted(i.session_id for i in await store.list_sessions(limit=100)) == sorted(ids)


def cluster_url(cluster: RedisCluster) -> str:
    node = cluster.get_default_node()
    return f"redis+cluster://{node.host}:{node.port}"


async def test_layout_on_the_cluster(cluster: RedisCluster, prefix: str) -> None:
    for session_id in ODD_IDS:
        session = RedisSession(session_id, redis_client=cluster, key_prefix=prefix)
        await session.add_items([{"id": session_id}, {"n": 2}])
        assert await session.pop_item() == {"n": 2}
        assert await session.get_items() == [{"id": session_id}]
        layout = ClusterLayout(prefix)
        raw = await cluster.lrange(layout.items_key(session_id), 0, -1)
        stamp, _, body = raw[0].decode().partition("|")
        assert json.loads(body) == {"id": session_id}
        assert await cluster.zscore(layout.index_key(session_id), session_id) >= int(stamp)
        await session.clear_session()
        assert await cluster.exists(layout.items_key(session_id)) == 0
        assert await cluster.zscore(layout.index_key(session_id), session_id) is None


async def test_sessions_spread_over_every_primary_and_the_store_lists_them_all(
    redis_cluster_url: str, cluster: RedisCluster, prefix: str
) -> None:
    ids = [f"user-{n}" for n in range(60)]
    for n, session_id in enumerate(ids):
        async with RedisSession.from_url(session_id, redis_cluster_url, key_prefix=prefix) as s:
            await s.add_items([{"n": n}] * (1 + n % 3))
    await cluster.initialize()
    owners = {cluster.get_node_from_key(ClusterLayout(prefix).items_key(i)).name for i in ids}
    assert len(owners) == len(cluster.get_primaries()) == 3

    brief = RedisSession("brief", redis_client=cluster, key_prefix=prefix, ttl=0.05)
    await brief.add_items([{"gone": True}])

    async def expired() -> bool:
        return not await cluster.exists(ClusterLayout(prefix).items_key("brief"))

    await eventually(expired, "Redis to expire 'brief'")  # its ttl is what is tested

    async with open_session_store(redis_cluster_url, key_prefix=prefix) as store:
        listed = []
        for page in range(7):
            listed += await store.list_sessions(offset=page * 10, limit=10)
        assert [info.session_id for info in listed] == ids[::-1]  # newest first, across nodes
        assert [info.item_count for info in listed] == [1 + n % 3 for n in range(60)][::-1]
        stats = await store.stats()
        assert (stats.sessions, stats.items) == (60, sum(1 + n % 3 for n in range(60)))
        info = await store.get_info("user-7")
        assert info is not None
        assert info.item_count == 2
        assert await store.get_info("brief") is None  # expired and pruned from its index
        assert await cluster.zscore(ClusterLayout(prefix).index_key("brief"), "brief") is None


async def test_from_url_and_an_explicit_cluster_client(
    redis_cluster_url: str, cluster: RedisCluster, prefix: str
) -> None:
    async with RedisSession.from_url("s", redis_cluster_url, key_prefix=prefix) as session:
        assert isinstance(session.client, RedisCluster)
        await session.add_items([{"n": 1}])
    explicit = RedisSession("s", redis_client=cluster, key_prefix=prefix)
    assert await explicit.get_items() == [{"n": 1}]
    with pytest.raises(ValueError, match="must not contain"):
        RedisSession("s", redis_client=cluster, key_prefix="a{b}")


async def test_a_batch_is_atomic_and_ordered_under_concurrency(
    cluster: RedisCluster, prefix: str
) -> None:
    session = RedisSession("shared", redis_client=cluster, key_prefix=prefix)

    async def writer(w: int) -> None:
        for i in range(20):
            await session.add_items([{"w": w, "i": i, "k": k} for k in range(3)])

    await asyncio.gather(*(writer(w) for w in range(10)))
    items = await session.get_items()
    assert len(items) == 600
    last: dict[int, int] = {}
    for pos in range(0, 600, 3):
        batch = items[pos : pos + 3]
        assert [(b["w"], b["i"], b["k"]) for b in batch] == [
            (batch[0]["w"], batch[0]["i"], k) for k in range(3)
        ]
        assert batch[0]["i"] > last.get(batch[0]["w"], -1)
        last[batch[0]["w"]] = batch[0]["i"]


async def test_an_unreachable_cluster_is_a_storage_error() -> None:
    async with RedisSession.from_url("s", "redis+cluster://127.0.0.1:1") as session:
        with pytest.raises(SessionStorageError) as info:
            await session.get_items()
        assert info.value.__cause__ is not None


# --- one Redis keeps the layout of the previous release --------------------------------------


@pytest.fixture
async def single(redis_url: str) -> AsyncIterator[tuple[Redis, str]]:
    client = Redis.from_url(redis_url)
    prefix = unique_prefix("compat")
    yield client, prefix
    await delete_prefix(client, prefix)
    await client.aclose()


async def test_data_of_the_previous_release_on_one_redis_is_still_read(
    redis_url: str, single: tuple[Redis, str]
) -> None:
    client, prefix = single
    # Exactly what the previous release stored: a list of "<ms>|<json>" and one index.
    then = int(time.time() * 1000) - 60_000
    await client.rpush(
        f"{prefix}:items:old-user",
        f"{then}|" + json.dumps({"role": "user", "content": "hi"}, separators=(",", ":")),
        f"{then + 1}|" + json.dumps({"role": "assistant", "content": "hello"}),
    )
    await client.zadd(f"{prefix}:index", {"old-user": then + 1})

    session = RedisSession("old-user", redis_client=client, key_prefix=prefix)
    assert await session.get_items() == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    async with open_session_store(redis_url, key_prefix=prefix) as store:
        [info] = await store.list_sessions()
        assert (info.session_id, info.item_count) == ("old-user", 2)
        assert info.created_at is not None
        assert int(info.created_at.timestamp() * 1000) == then
        records = await store.read_records("old-user")
        assert [r.item["content"] for r in records] == ["hi", "hello"]

    # New writes on one Redis keep that layout, so the previous release can still read them.
    await session.add_items([{"role": "user", "content": "again"}])
    assert await client.llen(f"{prefix}:items:old-user") == 3
    assert await client.zscore(f"{prefix}:index", "old-user") > then + 1
    assert sorted([k.decode() async for k in client.scan_iter(match=f"{prefix}:*")]) == [
        f"{prefix}:index",
        f"{prefix}:items:old-user",
    ]
    assert await session.pop_item() == {"role": "user", "content": "again"}
    await session.clear_session()
    assert await client.exists(f"{prefix}:items:old-user", f"{prefix}:index") == 0


class TestRedisClusterConformance(SessionConformanceTests):
    """The shared session contract on a 3-primary Redis Cluster."""

    @pytest.fixture(autouse=True)
    async def _client(self, redis_cluster_url: str) -> AsyncIterator[None]:
        self.client = RedisCluster.from_url(
            redis_cluster_url.replace("redis+cluster://", "redis://"), max_connections=100
        )
        self.prefix = unique_prefix("ctest")
        yield
        await delete_prefix(self.client, self.prefix)
        await self.client.aclose()

    async def make_session(self, session_id: str) -> Session:
        return RedisSession(session_id, redis_client=self.client, key_prefix=self.prefix)

    async def corrupt_latest_row(self, session: Session) -> None:
        key = ClusterLayout(self.prefix).items_key(session.session_id)
        await self.client.lset(key, -1, "not json{")


# The guard against a listing that never ends. It covers the prefix's clean-up too (3,000+
# sessions): 60 s was passed on a machine with two CPUs and a dozen busy processes.
@pytest.mark.timeout(180)
async def test_listings_and_walks_end_while_sessions_are_created_and_cleared(
    redis_cluster_url: str, prefix: str
) -> None:
    # 25 listings of a prefix and two full walks of 3,000 sessions spread over the slots, while
    # an application creates and clears sessions: each ends (the timeout is the guard), each
    # walk holds every session that exists throughout, each listing the prefix's sessions.
    async with open_session_store(redis_cluster_url, key_prefix=prefix) as store:
        gate = asyncio.Semaphore(32)

        async def seed(session_id: str) -> None:
            async with gate:
                await store.write_records(session_id, [SessionRecord(session_id, {"n": 1}, None)])

        stable = [f"s/{n:04d}" for n in range(3000)]
        wanted = [f"p/{n}" for n in range(5)]
        await asyncio.gather(*map(seed, [*stable, *wanted]))
        stop = asyncio.Event()
        created = 0

        async def app() -> None:
            nonlocal created
            while not stop.is_set():
                session = store.session(f"new/{created}")
                await session.add_items([{"n": created}])
                if created % 2:
                    await session.clear_session()
                created += 1

        writer = asyncio.create_task(app())
        try:
            for _ in range(25):
                page = await store.list_sessions(prefix="p/", limit=50)
                assert sorted(info.session_id for info in page) == wanted
            assert len(await store.list_sessions(limit=50)) == 50
            for _ in range(2):
                walked = {info.session_id async for info in store.iter_sessions()}
                assert walked >= {*stable, *wanted}
        finally:
            stop.set()
            await writer
        assert created > 25
