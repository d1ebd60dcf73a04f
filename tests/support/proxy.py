"""A TCP proxy in front of a Redis server or every node of a Redis Cluster, whose requests a
test can hold on the way to the server (to stall one call at a known point)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from redis.asyncio import Redis, RedisCluster


class HeldProxy:
    """Forwards connections to a Redis URL's server (each node, for `redis+cluster://`).

    `hold()` keeps every request that arrives afterwards from reaching the server, and sets
    `held` when one arrives; `release()` sends what was held and lets the traffic through.
    Replies always pass.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.cluster = url.startswith("redis+cluster://")
        self.held = asyncio.Event()
        self._open = asyncio.Event()
        self._open.set()
        self._ports: dict[tuple[str, int], int] = {}
        self._servers: list[asyncio.Server] = []
        self._pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen for each server: the URL's, or every node the cluster reports."""
        parts = urlsplit(self.url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        targets = [(host, port)]
        if self.cluster:
            from redis.asyncio import Redis

            probe = Redis(host=host, port=port)
            try:
                slots = await probe.execute_command("CLUSTER SLOTS")
            finally:
                await probe.aclose()
            targets = sorted(
                {(_text(node[0]) or host, int(node[1])) for entry in slots for node in entry[2:]}
            )
        for target in targets:
            server = await asyncio.start_server(
                lambda r, w, t=target: self._serve(r, w, t), "127.0.0.1", 0
            )
            self._servers.append(server)
            self._ports[target] = server.sockets[0].getsockname()[1]

    def client(self) -> Redis | RedisCluster:
        """A client of the same database that connects through the proxy."""
        from redis.asyncio import Redis, RedisCluster

        parts = urlsplit(self.url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        if not self.cluster:
            netloc = f"127.0.0.1:{self._ports[(host, port)]}"
            return Redis.from_url(urlunsplit(parts._replace(netloc=netloc)))
        return RedisCluster(
            host="127.0.0.1",
            port=self._ports[(host, port)],
            address_remap=lambda address: ("127.0.0.1", self._ports[address]),
        )

    def hold(self) -> None:
        """Hold every request from now on (until `release`)."""
        self.held.clear()
        self._open.clear()

    def release(self) -> None:
        """Send the held requests and let everything through."""
        self._open.set()

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        self.release()
        for server in self._servers:
            server.close()
        for pump in list(self._pumps):
            pump.cancel()
        for pump in list(self._pumps):
            with contextlib.suppress(BaseException):
                await pump
        for server in self._servers:
            await server.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: tuple[str, int]
    ) -> None:
        up_reader, up_writer = await asyncio.open_connection(*target)
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer, hold=True)),
            asyncio.create_task(self._pump(up_reader, writer, hold=False)),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
                self._pumps.discard(pump)
            for stream in (writer, up_writer):
                stream.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, hold: bool
    ) -> None:
        while data := await reader.read(65536):
            if hold and not self._open.is_set():
                self.held.set()
                await self._open.wait()
            writer.write(data)
            await writer.drain()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
