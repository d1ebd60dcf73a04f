"""Drop nav entries of pages that other work has not written yet.

The nav in mkdocs.yml lists every page the site will have. A few of them are written separately
(the backends guide, the compaction guide, the translation guide and their API pages); until such a
file exists, its nav entry is removed so the strict build still passes. Any other missing page
stays in the nav and fails the strict build as usual.
"""

from __future__ import annotations

import os
from typing import Any

from mkdocs.config.defaults import MkDocsConfig

# Pages that may not exist yet, relative to docs/.
OPTIONAL_PAGES = frozenset(
    {
        "backends.md",
        "compaction.md",
        "translation.md",
        "ref/backends.md",
        "ref/compaction.md",
    }
)


def _missing(path: str, docs_dir: str) -> bool:
    return path in OPTIONAL_PAGES and not os.path.isfile(os.path.join(docs_dir, path))


def _prune(items: list[Any], docs_dir: str) -> list[Any]:
    kept: list[Any] = []
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) and len(item) == 1 else item
        if isinstance(value, str) and _missing(value, docs_dir):
            continue
        if isinstance(value, list):
            title = next(iter(item))
            children = _prune(value, docs_dir)
            if children:
                kept.append({title: children})
            continue
        kept.append(item)
    return kept


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Remove the nav entries of optional pages that do not exist."""
    if config.nav:
        config.nav = _prune(config.nav, config.docs_dir)
    return config
