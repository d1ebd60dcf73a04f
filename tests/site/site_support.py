"""Shared by the site tests: where things are, the built site, and reading built HTML."""

from __future__ import annotations

import functools
import posixpath
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = ("en", "ja", "ko", "zh")
TRANSLATIONS = ("ja", "ko", "zh")
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass(frozen=True)
class BuiltSite:
    """A strict build of the site: where it is and what the build printed."""

    path: Path
    log: str

    def page(self, url: str) -> Path:
        """The HTML file of a site URL such as `ja/sessions/`."""
        return self.path / url / "index.html"

    def lang_root(self, language: str) -> Path:
        """The folder of a language's pages (the site root for English)."""
        return self.path if language == "en" else self.path / language


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href") is not None:
            self.links.append(str(values["href"]))


@functools.cache
def parse(path: Path) -> tuple[frozenset[str], tuple[str, ...]]:
    """Return the ids and the `<a href>` values of an HTML file."""
    collector = _Collector()
    collector.feed(path.read_text(encoding="utf-8"))
    collector.close()
    return frozenset(collector.ids), tuple(collector.links)


def resolve(site: Path, page: Path, href: str) -> tuple[Path, str] | None:
    """Resolve `href` found in `page` to (target file, fragment); `None` for external links."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    # The site is served at the root, so `/x/` is the site's `x/`.
    base = "" if parts.path.startswith("/") else page.parent.relative_to(site).as_posix()
    joined = posixpath.normpath(posixpath.join(base, unquote(parts.path).lstrip("/")))
    target = site / joined
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)
