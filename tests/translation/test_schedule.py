"""The schedule of a run: a page's review does not wait for the other pages' drafts, and when
the slots are all taken, reviews go before the drafts of pages not started yet."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from translation_support import RunSite

from docs_i18n.slots import FOLLOW_UP, OPENING, Slots
from echo_translator import EchoTranslator
from turnstore.testing import FakeOpenAIServer, FakeReply, RecordedRequest


class _Log:
    """The fake model's view of a run: ("arrived" or "replied", kind, page) in order."""

    def __init__(self, echo: EchoTranslator) -> None:
        self.echo = echo
        self.events: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        self.hold: tuple[str, str] | None = None  # (kind, page) whose reply waits for...
        self.until: tuple[str, str] | None = None  # ...this (kind, page) to arrive
        self.arrived = threading.Condition(self.lock)

    def __call__(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        body = request.body if isinstance(request.body, dict) else {}
        first = str(body["input"][0]["content"])
        kind = "review" if (body.get("text") or {}).get("format") else "draft"
        found = re.search(r"the page `([^`]+)`", first)
        assert found is not None
        page = found[1]
        with self.lock:
            self.events.append(("arrived", kind, page))
            self.arrived.notify_all()
        reply = self.echo(request)
        if (kind, page) == self.hold:
            with self.lock:
                # bounded below the client timeout (5 s): a wrong schedule fails, not hangs
                self.arrived.wait_for(lambda: ("arrived", *self.until) in self.events, 3)
        with self.lock:
            self.events.append(("replied", kind, page))
        return reply

    def index(self, event: str, kind: str, page: str) -> int:
        return self.events.index((event, kind, page))


@pytest.fixture
def log(fake_openai: FakeOpenAIServer) -> _Log:
    recorder = _Log(EchoTranslator(latency=0.3))
    fake_openai.route("POST", "/v1/responses", recorder)
    return recorder


async def test_a_page_is_reviewed_while_another_pages_draft_is_still_out(
    site: Path, log: _Log, run_site: RunSite
) -> None:
    """The draft of `guide/custom.md` is answered only once the review of `index.md` has come
    in (or, if it never comes, after a bound): a run that reviewed after all drafts would
    show the review after that draft's reply."""
    log.hold, log.until = ("draft", "guide/custom.md"), ("review", "index.md")
    outcome = await run_site(languages=["ja"])
    assert outcome.code == 0, outcome.output
    assert log.index("arrived", "review", "index.md") < log.index(
        "replied", "draft", "guide/custom.md"
    )
    assert (site / "docs" / "ja" / "index.md").exists()


async def test_with_one_slot_a_review_goes_before_the_draft_of_a_page_not_started(
    site: Path, log: _Log, run_site: RunSite
) -> None:
    """Three pages, one slot: the first page's review is queued while the second page's draft
    is out, and it takes the slot before the third page's draft, which waited longer."""
    outcome = await run_site(languages=["ja"], concurrency=1)
    assert outcome.code == 0, outcome.output
    arrivals = [(kind, page) for event, kind, page in log.events if event == "arrived"]
    drafts = [page for kind, page in arrivals if kind == "draft"]
    assert len(drafts) == 3
    first_review = next(i for i, (kind, _) in enumerate(arrivals) if kind == "review")
    assert first_review < arrivals.index(("draft", drafts[2]))
    assert arrivals[first_review] == ("review", drafts[0])


async def test_slots_serve_follow_ups_first_then_in_order_and_never_exceed_the_size() -> None:
    slots = Slots(2)
    order: list[str] = []
    held = 0
    most = 0
    gate = asyncio.Event()

    async def _use(name: str, priority: int) -> None:
        nonlocal held, most
        async with slots.slot(priority):
            held += 1
            most = max(most, held)
            order.append(name)
            await gate.wait()
            held -= 1

    first = [asyncio.create_task(_use(f"open{i}", OPENING)) for i in range(2)]
    await asyncio.sleep(0)
    later = [asyncio.create_task(_use(f"open{i}", OPENING)) for i in range(2, 4)]
    follow = [asyncio.create_task(_use(f"review{i}", FOLLOW_UP)) for i in range(2)]
    await asyncio.sleep(0)
    assert order == ["open0", "open1"]  # the others wait: no slot is free
    gate.set()
    await asyncio.gather(*first, *later, *follow)
    assert order == ["open0", "open1", "review0", "review1", "open2", "open3"]
    assert most == 2


async def test_a_cancelled_waiter_gives_its_slot_on() -> None:
    slots = Slots(1)
    await slots.acquire(OPENING)
    waiting = asyncio.create_task(slots.acquire(FOLLOW_UP))
    after = asyncio.create_task(slots.acquire(OPENING))
    await asyncio.sleep(0)
    slots.release()  # handed to `waiting`, which is cancelled before it runs
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(after, 5)  # the slot went on to the next waiter
    slots.release()
    async with slots.slot():
        pass
