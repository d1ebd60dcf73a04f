"""Guards against a test leaving an asyncio loop marked as running on the main thread.

Playwright's sync API does this while it is started; a leak makes every later `asyncio.run()` fail.
The file name sorts after tests/site/, so in a full run it checks right after the browser tests.
"""

from __future__ import annotations

import asyncio


def test_no_event_loop_is_running_on_the_main_thread() -> None:
    assert asyncio._get_running_loop() is None
    assert asyncio.run(asyncio.sleep(0, result="ok")) == "ok"
