"""Search per language: its own index with its own settings, its words found as readers type them.

mkdocs-static-i18n builds the languages one after the other into one site folder, and Material's
search plugin writes `search/search_index.json` in each build; a page's search loads the index
at the `base` of its page config, the site root in every language. This hook, with public
events and the built files only:

1. in each language build, after Material has written the index, rewrites it for the language
   and writes it to the language's root (`ja/search/search_index.json`, locations relative to
   it; the English one is written back over the i18n plugin's merged index once every language
   is built): Material's own search settings for the language (lunr language, separator,
   pipeline) with `.` as a separator too; the U+200B marks that Material's jieba segmentation
   puts between Han words kept in Chinese only (Japanese, and the Han words quoted in English or
   Korean, are not cut apart); API objects titled with their qualified name (`Session.pop_item`)
   and boosted, so an object's own entry ranks first for its name; the glossary's search
   synonyms (`search_synonyms` in docs/i18n/glossary.yml) in the index's config;
2. rewrites `base` in every translated page's config (and 404 page's) to its language's root;
3. teaches jieba the glossary's Chinese terms (`智能体` stays one word);
4. keeps source out of the index (Mermaid diagrams, fenced code blocks and mkdocstrings' source
   blocks get `data-search-exclude`, which Material's search skips; they filled a third of the
   index): inline code, API signatures and the prose around a listing stay searchable;
5. points every page's search at `search_worker.js` (beside this file), which runs Material's
   worker unchanged after splitting Japanese and Chinese queries the way the index was split,
   adding synonyms, and asking for the parts of a Python name (see its comments).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url, write_file

INDEX = os.path.join("search", "search_index.json")
WORKER = Path(__file__).with_name("search_worker.js")
WORKER_URL = "assets/javascripts/workers/search_worker.js"
GLOSSARY = Path("docs") / "i18n" / "glossary.yml"
_OBJECT = re.compile(r"#turnstore\.(?P<name>[\w.]+)$")  # "ref/session/#turnstore.Session.get_items"
OBJECT_BOOST = 3  # an API object's entry over a guide section with the same words in its title
_CONFIG = r'(<script id="__config" type="application/json">\s*\{{.*?"{key}":\s*")([^"]*)(")'
_BASE = re.compile(_CONFIG.format(key="base"), re.S)
_SEARCH = re.compile(_CONFIG.format(key="search"), re.S)

# The opening tags of blocks that are source, not prose.
_LISTING = re.compile(
    r'<(?:pre class="mermaid"|div class="language-[\w+-]+ highlight"'
    r'|details class="mkdocstrings-source")(?=>)'
)

_english: bytes | None = None  # the English index, written back after the other languages


def _glossary(config: MkDocsConfig) -> dict[str, Any]:
    path = Path(config.config_file_path or ".").resolve().parent / GLOSSARY
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return data if isinstance(data, dict) else {}


def _languages(config: MkDocsConfig) -> tuple[str, str]:
    """(language being built, default language)."""
    i18n = config.plugins["i18n"]
    return str(i18n.current_language), str(i18n.default_language)


def material_search_settings(config: MkDocsConfig, language: str) -> dict[str, Any]:
    """Material's search settings (lang, separator, pipeline) for `language`, `.` a separator."""
    env = config.theme.get_env()
    own = env.get_template(f"partials/languages/{language}.html").module
    fallback = env.get_template("partials/languages/en.html").module

    def text(key: str) -> str:
        return str(own.t(key) or fallback.t(key))

    separator = text("search.config.separator")
    if separator.startswith("[") and "." not in separator.split("]")[0]:
        separator = "[." + separator[1:]
    pipeline = [p for p in re.split(r"\s*,\s*", text("search.config.pipeline").strip()) if p]
    return {"lang": [text("search.config.lang")], "separator": separator, "pipeline": pipeline}


def language_entries(entries: list[dict[str, Any]], language: str, default: str) -> list[Any]:
    """The build's entries: locations from the language's root, objects named and boosted.

    Among objects that share a short name (`Session.pop_item`, `SQLiteSession.pop_item`), the
    one with the shortest qualified name (the protocol's, usually) gets a little more.
    """
    prefix = "" if language == default else f"{language}/"
    shortest: dict[str, dict[str, Any]] = {}
    docs = []
    for entry in entries:
        entry = {**entry, "location": entry["location"].removeprefix(prefix)}
        if language != "zh":
            entry["title"] = entry["title"].replace("\u200b", "")
            entry["text"] = entry["text"].replace("\u200b", "")
        match = _OBJECT.search(entry["location"])
        if match:
            entry.update(title=match["name"], boost=OBJECT_BOOST)
            short = match["name"].rsplit(".", 1)[-1]
            if short not in shortest or len(match["name"]) < len(shortest[short]["title"]):
                shortest[short] = entry
        docs.append(entry)
    for entry in shortest.values():
        entry["boost"] = OBJECT_BOOST + 1
    return docs


def on_config(config: MkDocsConfig) -> None:
    """Teach jieba the glossary's Chinese terms before any page is indexed."""
    try:
        import jieba
    except ImportError:  # Material then indexes Chinese without segmentation at all
        return
    for term in ((_glossary(config).get("terms") or {}).get("zh") or {}).values():
        jieba.add_word(str(term))


@event_priority(-50)  # after the hooks that write blocks (reference.py), before search indexes
def on_page_content(html_text: str, page: Page, config: MkDocsConfig, **kwargs: Any) -> str:
    """Keep the page's diagrams and listings out of the search index."""
    return _LISTING.sub(lambda match: f"{match.group(0)} data-search-exclude", html_text)


@event_priority(-50)  # after Material's search (0) wrote the index, before i18n (-100) goes on
def write_language_index(config: MkDocsConfig) -> None:
    """Write this language's index at its root, with its settings."""
    global _english
    language, default = _languages(config)
    path = os.path.join(config.site_dir, INDEX)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as file:
        index = json.load(file)
    settings = material_search_settings(config, language)
    synonyms = (_glossary(config).get("search_synonyms") or {}).get(language) or {}
    if synonyms:
        settings["synonyms"] = {
            str(word): [str(t) for t in (ts if isinstance(ts, list) else [ts])]
            for word, ts in synonyms.items()
        }
    data = {"config": {**settings, "fields": index["config"]["fields"]}}
    data["docs"] = language_entries(index["docs"], language, default)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if language == default:
        _english = text
    write_file(text, os.path.join(config.site_dir, "" if language == default else language, INDEX))
    write_file(WORKER.read_bytes(), os.path.join(config.site_dir, WORKER_URL))


@event_priority(-200)  # after mkdocs-static-i18n (-100) wrote its index of every language
def restore_english_index(config: MkDocsConfig) -> None:
    """The site root's index is the English one."""
    if not config.plugins["i18n"].building and _english is not None:
        write_file(_english, os.path.join(config.site_dir, INDEX))


on_post_build = CombinedEvent(write_language_index, restore_english_index)


def configured(output: str, base: str | None, worker: str) -> str:
    """The page with `base` (unless None) and the search worker set in its Material config."""
    if base is not None:
        output = _BASE.sub(lambda m: m.group(1) + base + m.group(3), output, count=1)
    material = lambda m: m.group(2).rsplit("/", 1)[-1]  # noqa: E731
    return _SEARCH.sub(
        lambda m: f"{m.group(1)}{worker}?material={material(m)}{m.group(3)}", output, count=1
    )


@event_priority(-110)
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """A translated page searches its language's index; every page uses the site's worker."""
    language, default = _languages(config)
    url = page.url or "."
    base = None if language == default else get_relative_url(f"{language}/", url)
    return configured(output, base, get_relative_url(WORKER_URL, url))


@event_priority(-110)
def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    """The 404 page too (absolute URLs: it is served at any path)."""
    if template_name != "404.html":
        return output
    language, default = _languages(config)
    root = urlsplit(config.site_url or "/").path.rstrip("/") + "/"
    base = None if language == default else f"{root}{language}/"
    return configured(output, base, root + WORKER_URL)
