"""Japanese search finds compound words: the query is segmented like the index.

Material segments the Japanese index with TinySegmenter but not the query, so a query such as
"適合性キット" (a heading of the sessions guide) or "ツール呼び出し" found nothing. This hook

1. writes `assets/javascripts/workers/search_ja.js` (from `search_ja_worker.js` beside it): a
   worker that segments each Japanese word of a query with the same segmenter, then runs
   Material's own search worker unchanged;
2. points the Japanese pages' search at that worker (the `search` entry of Material's config in
   each page).

Other languages keep Material's worker as it is.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import write_file

LANGUAGE = "ja"
WORKERS = "assets/javascripts/workers"
WORKER = "search_ja.js"
TEMPLATE = Path(__file__).with_name("search_ja_worker.js")
# The worker in Material's page config, e.g. "../assets/javascripts/workers/search.1a2b.min.js".
_SEARCH = re.compile(
    r'(<script id="__config" type="application/json">.*?"search":\s*"[^"]*/)'
    r'(search\.[0-9a-f]+\.min\.js)(")',
    re.S,
)


def _language(config: MkDocsConfig) -> str | None:
    i18n = config.plugins.get("i18n")
    return getattr(i18n, "current_language", None)


def use_japanese_worker(output: str) -> str:
    """Point the page's search at the Japanese worker."""
    return _SEARCH.sub(lambda m: m.group(1) + WORKER + m.group(3), output, count=1)


def worker_source(material_worker: str) -> str:
    """The Japanese worker's code, importing Material's worker named `material_worker`."""
    return TEMPLATE.read_text(encoding="utf-8").replace(
        '"__MATERIAL_WORKER__"', json.dumps(material_worker)
    )


@event_priority(-120)  # after docs_hooks/i18n_search.py has rewritten `base` (-110)
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Japanese pages search with the segmenting worker."""
    if _language(config) != LANGUAGE:
        return output
    return use_japanese_worker(output)


def on_post_build(config: MkDocsConfig) -> None:
    """Write the Japanese worker next to Material's (theme files are copied in every build)."""
    folder = os.path.join(config.site_dir, WORKERS)
    if not os.path.isdir(folder):
        return
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(r"search\.[0-9a-f]+\.min\.js", n))
    if len(names) != 1:
        raise RuntimeError(f"expected one Material search worker in {folder}, found {names}")
    write_file(worker_source(names[0]).encode("utf-8"), os.path.join(folder, WORKER))
