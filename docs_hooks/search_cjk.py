"""Search finds its words: query and index split alike, synonyms, Python names ranked.

Three gaps in Material's search for these languages, seen in the browser:

- Japanese: the index is segmented with TinySegmenter but the query is not, so "適合性キット"
  (a heading of the sessions guide) or "ツール呼び出し" found nothing.
- Chinese and Japanese: Material splits each run of Han characters in a query into the index's
  words, but its loop never tries a word that ends on the run's last character, so "会话" was
  searched as "会" and "適合性" as "適合" (results polluted, the wrong words highlighted).
- Chinese: jieba, which segments the index at build time, cut the glossary's own terms apart
  ("智能体" into "智能" + "体", "运行器" into "运行" + "器"), so they were no word of the index.

This hook

1. adds the Chinese terms of the translation glossary (`docs/i18n/glossary.yml`) to jieba's words;
2. writes `assets/javascripts/workers/search_cjk_material.js`, Material's search worker with that
   loop bound corrected (`<` to `<=`; if a Material release changes the code, its worker is used
   unchanged), and `search_cjk.js` (from `search_cjk_worker.js` beside this file), which segments
   Japanese queries and then runs it;
3. points every page's search at `search_cjk.js` (the `search` entry of Material's config in each
   page), which also adds the glossary's search synonyms to a query and asks for the parts of a
   Python name (`Session.pop_item`) as exact words, so the object's own entry ranks first.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import write_file

log = logging.getLogger(f"mkdocs.hooks.{__name__}")

LANGUAGES = frozenset({"en", "ja", "ko", "zh"})
WORKERS = "assets/javascripts/workers"
WORKER = "search_cjk.js"
PATCHED = "search_cjk_material.js"
TEMPLATE = Path(__file__).with_name("search_cjk_worker.js")
GLOSSARY = Path("docs") / "i18n" / "glossary.yml"
# Material's Han-run splitter tries t.slice(s, o) for o < t.length: never the run's last character.
LOOP = "for(let o=s+1;o<t.length;o++)t.slice(s,o)in e"
FIXED_LOOP = "for(let o=s+1;o<=t.length;o++)t.slice(s,o)in e"
# The worker in Material's page config, e.g. "../assets/javascripts/workers/search.1a2b.min.js".
_SEARCH = re.compile(
    r'(<script id="__config" type="application/json">.*?"search":\s*"[^"]*/)'
    r'(search\.[0-9a-f]+\.min\.js)(")',
    re.S,
)


def _language(config: MkDocsConfig) -> str | None:
    i18n = config.plugins.get("i18n")
    return getattr(i18n, "current_language", None)


def read_glossary(root: Path) -> dict[str, Any]:
    """The translation glossary (`docs/i18n/glossary.yml`), read once per version of the file."""
    path = root / GLOSSARY
    if not path.is_file():
        return {}
    return _parsed_glossary(path, path.stat().st_mtime_ns)


@functools.cache
def _parsed_glossary(path: Path, mtime_ns: int) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return data if isinstance(data, dict) else {}


def glossary_terms(root: Path, language: str) -> list[str]:
    """The glossary's translations for `language` (an empty list without a glossary)."""
    data = read_glossary(root)
    terms = (data.get("terms") or {}).get(language) or {}
    return [str(term) for term in terms.values()]


def use_cjk_worker(output: str) -> str:
    """Point the page's search at the CJK worker."""
    return _SEARCH.sub(lambda m: m.group(1) + WORKER + m.group(3), output, count=1)


def patch_material_worker(source: str) -> str:
    """Material's worker with its Han-run splitting corrected (unchanged if the code moved)."""
    if source.count(LOOP) != 1:
        log.info("search_cjk: Material's Han-run loop not found; its worker is used unchanged")
        return source
    source = source.replace(LOOP, FIXED_LOOP)
    return re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", source)


def worker_source(material_worker: str) -> str:
    """The CJK worker's code, importing the worker named `material_worker`."""
    return TEMPLATE.read_text(encoding="utf-8").replace(
        '"__MATERIAL_WORKER__"', json.dumps(material_worker)
    )


def _search_plugin(config: MkDocsConfig) -> Any:
    for name in ("material/search", "search"):
        if name in config.plugins:
            return config.plugins[name]
    return None


@event_priority(-100)  # after mkdocs-static-i18n has switched to the language being built
def on_pre_build(config: MkDocsConfig) -> None:
    """Only Chinese pages are segmented with jieba.

    Material segments every run of Han characters with jieba when it is installed, whatever the
    page's language: Japanese pages were cut apart (then joined again by
    docs_hooks/i18n_search.py, since it breaks Japanese search), which took a fifth of the
    Japanese build, and the Han words quoted in English or Korean pages were cut too.

    The segmenting method belongs to the search index that Material's plugin makes anew in each
    build's `on_config` (setting it on the plugin, as this hook once did, changed nothing).
    """
    search = _search_plugin(config)
    if search is None or not search.config.enabled:
        return
    index = getattr(search, "search_index", None)
    if not callable(getattr(index, "_segment_chinese", None)):
        raise PluginError(
            "search_cjk: Material's search index has no _segment_chinese method any more;"
            " see which pages it segments with jieba now"
        )
    if _language(config) == "zh":
        index.__dict__.pop("_segment_chinese", None)  # Material's own method
    else:
        index._segment_chinese = _unsegmented


def _unsegmented(data: str) -> str:
    return data


def on_config(config: MkDocsConfig) -> None:
    """Teach jieba the glossary's Chinese terms before any page is indexed."""
    try:
        import jieba
    except ImportError:  # Material then indexes Chinese without segmentation at all
        return
    root = Path(config.config_file_path or ".").resolve().parent
    for term in glossary_terms(root, "zh"):
        jieba.add_word(term)


@event_priority(-120)  # after docs_hooks/i18n_search.py has rewritten `base` (-110)
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Japanese and Chinese pages search with the CJK worker."""
    if _language(config) not in LANGUAGES:
        return output
    return use_cjk_worker(output)


@event_priority(-120)
def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    """The 404 page of these languages too."""
    if template_name != "404.html" or _language(config) not in LANGUAGES:
        return output
    return use_cjk_worker(output)


def on_post_build(config: MkDocsConfig) -> None:
    """Write the CJK workers next to Material's (theme files are copied in every build)."""
    folder = os.path.join(config.site_dir, WORKERS)
    if not os.path.isdir(folder):
        return
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(r"search\.[0-9a-f]+\.min\.js", n))
    if len(names) != 1:
        raise RuntimeError(f"expected one Material search worker in {folder}, found {names}")
    material = Path(folder, names[0]).read_text(encoding="utf-8")
    write_file(patch_material_worker(material).encode("utf-8"), os.path.join(folder, PATCHED))
    write_file(worker_source(PATCHED).encode("utf-8"), os.path.join(folder, WORKER))
