"""The documentation site, built once per test run and served over http on 127.0.0.1.

`built_site` runs the same strict build as `make docs-build` (every language, link and anchor
validation as errors) into a temporary directory, once for all `pytest -n` workers; `site_url`
serves it with a threaded `http.server` (Material hides its search over `file://`) that answers
a missing path the way GitHub Pages does: status 404 with the site's root `404.html`. The
browser fixtures drive the system Chromium through Playwright: one browser per module, one
context per test.

`DOCS_SITE_DIR=path` tests a strict build made beforehand
(`mkdocs build --strict -d path`) instead of building again: quicker while iterating on tests.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from site_support import CHROMIUM_ARGS, ROOT, BuiltSite

from support.shared import once_per_run


@pytest.fixture(scope="session")
def built_site(request: pytest.FixtureRequest) -> BuiltSite:
    """Build the whole site once, strictly, and fail with the build's output if it fails.

    Once per run: under `pytest -n` the first worker builds and the others read its site.
    """
    prebuilt = os.environ.get("DOCS_SITE_DIR")
    if prebuilt:
        return BuiltSite(Path(prebuilt), "")

    def build(site: Path) -> dict[str, Any]:
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DOCS_TRANSLATIONS": "true"}
        env.pop("SITE_URL", None)
        proc = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        return {"returncode": proc.returncode, "log": proc.stdout + proc.stderr}

    site, built = once_per_run(request, "site", build)
    if built["returncode"] != 0:
        pytest.fail(f"mkdocs build --strict failed ({built['returncode']}):\n{built['log']}")
    return BuiltSite(site, built["log"])


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A missing path gets the site's root 404 page, as on GitHub Pages."""
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@pytest.fixture(scope="session")
def site_url(built_site: BuiltSite) -> Iterator[str]:
    """The built site served on a free port of 127.0.0.1; the URL ends with `/`."""
    handler = functools.partial(_QuietHandler, directory=str(built_site.path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    """One headless system Chromium per module (never a downloaded browser).

    Module scope, not session: Playwright's sync API keeps an asyncio loop marked as running on
    the main thread while it is started, which would make every later `asyncio.run()` in the
    test session fail with "cannot be called from a running event loop".
    """
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop-sized page (the header search box and the sidebars are visible)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = context.new_page()
        tab.set_default_timeout(15_000)
        yield tab
    finally:
        context.close()
