"""One search index per language, with that language's search settings.

Material's search loads `search/search_index.json` relative to the `base` in each page's config,
which is the site root for every language, and mkdocs-static-i18n merges every language into that
one file with English search settings. A Japanese reader then gets Korean hits, Japanese words are
split like English ones, and translated pages whose text equals the English page's are dropped.

This hook instead:

1. after the last language build, takes each language's search entries (the i18n plugin keeps
   them, before its de-duplication) and Material's own search settings for the language (lunr
   language, separator, pipeline);
2. writes `search/search_index.json` with the English entries only, and
   `<lang>/search/search_index.json` for each translation, with locations relative to `<lang>/`
   (each language build renders the API reference, so API names are searchable in every
   language). Japanese entries lose the U+200B marks that Material's jieba segmentation puts
   between Han words (meant for Chinese, they break Japanese search);
3. makes API objects findable by name: an object's entry is titled with its qualified name
   (`Session.pop_item`, not "pop_item async" with its symbol labels), `.` separates words (so
   both `pop_item` and `Session.pop_item` match it) and object entries get a boost, so the
   object's own entry ranks first for its name (source listings are kept out of the index by
   docs_hooks/source_links.py);
4. adds the glossary's search synonyms for the language (`search_synonyms` in
   docs/i18n/glossary.yml: 圧縮 finds コンパクション) to the index's config, where the search worker
   of docs_hooks/search_cjk.py reads them;
5. rewrites `base` in the config of every translated page to that language's root, so the page
   loads its language's index and resolves result links against it.

mkdocs-static-i18n's own merged index is not made: after the last language it compared every
English entry with every translated one to drop duplicates and wrote `search/search_index.json`
with all languages, which step 2 then wrote over.

It relies on mkdocs-static-i18n's `building` and `search_entries` attributes (its version is
pinned in pyproject.toml) and on Material's per-language templates for the search settings.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url, write_file
from search_cjk import read_glossary

ZERO_WIDTH_SPACE = "\u200b"
# Languages whose words Material's jieba segmentation must not split (it is meant for Chinese).
UNSEGMENTED = frozenset({"ja"})
# An API object's anchor, e.g. "ref/session/#turnstore.Session.pop_item".
_OBJECT = re.compile(r"#turnstore\.(?P<name>[\w.]+)$")
# How much an API object's entry outweighs a guide section with the same words in its title.
OBJECT_BOOST = 3


def _i18n(config: MkDocsConfig) -> Any:
    return config.plugins["i18n"]


def _search(config: MkDocsConfig) -> Any:
    for name in ("material/search", "search"):
        if name in config.plugins:
            return config.plugins[name]
    raise LookupError("the search plugin is not enabled")


def material_search_settings(config: MkDocsConfig, language: str) -> dict[str, Any]:
    """Return Material's search settings (lang, separator, pipeline) for `language`."""
    env = config.theme.get_env()
    own = env.get_template(f"partials/languages/{language}.html").module
    fallback = env.get_template("partials/languages/en.html").module

    def text(key: str) -> str:
        return str(own.t(key) or fallback.t(key))

    pipeline = [p for p in re.split(r"\s*,\s*", text("search.config.pipeline").strip()) if p]
    return {
        "lang": [text("search.config.lang")],
        "separator": text("search.config.separator"),
        "pipeline": pipeline,
    }


def split_by_language(
    entries: list[dict[str, Any]], languages: list[str], default: str
) -> dict[str, list[dict[str, Any]]]:
    """Group entries by the language folder their location starts with.

    Locations become relative to the language's root; each location is kept once (the first).
    """
    groups: dict[str, list[dict[str, Any]]] = {language: [] for language in languages}
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        language = next(
            (
                lang
                for lang in languages
                if lang != default and entry["location"].startswith(f"{lang}/")
            ),
            default,
        )
        location = entry["location"]
        if language != default:
            location = location[len(language) + 1 :]
        if (language, location) in seen:
            continue
        seen.add((language, location))
        entry = {**entry, "location": location}
        if language in UNSEGMENTED:
            for key in ("title", "text"):
                entry[key] = entry[key].replace(ZERO_WIDTH_SPACE, "")
        groups.setdefault(language, []).append(entry)
    return groups


def name_api_objects(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Title API object entries with their qualified name and boost them.

    Among objects that share a short name (`Session.pop_item`, `SQLiteSession.pop_item`, ...),
    the one with the shortest qualified name (the protocol's, usually) gets a little more, so a
    search for the bare name starts with it.
    """
    named: list[dict[str, Any]] = []
    shortest: dict[str, tuple[int, int]] = {}
    for entry in entries:
        match = _OBJECT.search(entry["location"])
        if match:
            name = match["name"]
            entry = {**entry, "title": name, "boost": OBJECT_BOOST}
            short = name.rsplit(".", 1)[-1]
            if short not in shortest or len(name) < shortest[short][0]:
                shortest[short] = (len(name), len(named))
        named.append(entry)
    for _, index in shortest.values():
        named[index]["boost"] = OBJECT_BOOST + 1
    return named


def with_dot_separator(separator: str) -> str:
    """The separator regex with `.` added to its character class (`.` then splits words)."""
    if separator.startswith("[") and "]" in separator and "." not in separator.split("]")[0]:
        close = separator.index("]")
        return separator[:close] + "." + separator[close:]
    return separator


def search_synonyms(root: Path, language: str) -> dict[str, list[str]]:
    """The glossary's search synonyms for `language`: a word readers type -> the pages' words."""
    table = (read_glossary(root).get("search_synonyms") or {}).get(language) or {}
    return {
        str(word): [str(v) for v in (targets if isinstance(targets, list) else [targets])]
        for word, targets in table.items()
    }


def _merged_index_not_made(config: MkDocsConfig) -> None:
    """Stands in for mkdocs-static-i18n's merged index, which on_post_build writes over."""


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """mkdocs-static-i18n makes no merged index (see the module's docstring)."""
    _i18n(config).reconfigure_search_index = _merged_index_not_made
    return config


@event_priority(-200)  # after mkdocs-static-i18n (-100) has built every language
def on_post_build(config: MkDocsConfig) -> None:
    """Write one index per language."""
    i18n = _i18n(config)
    if i18n.building:
        return  # a nested language build: the outer build writes every index
    default = i18n.default_language
    languages = list(i18n.build_languages)
    # The plugin keeps every language's entries, before its de-duplication, in build order.
    groups = split_by_language(i18n.search_entries, languages, default)
    fields = copy.deepcopy(_search(config).config.fields)
    root = Path(config.config_file_path or ".").resolve().parent
    for language in languages:
        docs = name_api_objects(groups.get(language, []))
        settings: dict[str, Any] = {**material_search_settings(config, language), "fields": fields}
        settings["separator"] = with_dot_separator(settings["separator"])
        synonyms = search_synonyms(root, language)
        if synonyms:
            settings["synonyms"] = synonyms
        subdir = "" if language == default else language
        path = os.path.join(config.site_dir, subdir, "search", "search_index.json")
        data = {"config": settings, "docs": docs}
        write_file(json.dumps(data, separators=(",", ":")).encode("utf-8"), path)
    # The plugin never empties this list; without this, `mkdocs serve` rebuilds pile up entries.
    i18n.search_entries.clear()


_BASE = re.compile(
    r'(<script id="__config" type="application/json">\s*\{.*?"base":\s*")([^"]*)(")', re.S
)


def rewrite_base(output: str, base: str) -> str:
    """Set `base` in the page's Material config to `base`."""
    return _BASE.sub(lambda m: m.group(1) + base + m.group(3), output, count=1)


@event_priority(-110)
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Point a translated page's search at its language's index."""
    i18n = _i18n(config)
    language = i18n.current_language
    if language == i18n.default_language:
        return output
    return rewrite_base(output, get_relative_url(f"{language}/", page.url or "."))


@event_priority(-110)
def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    """A translated 404 page (absolute URLs, served anywhere) searches its language too."""
    i18n = _i18n(config)
    language = i18n.current_language
    if template_name != "404.html" or language == i18n.default_language:
        return output
    base = urlsplit(config.site_url or "/").path or "/"
    if not base.endswith("/"):
        base += "/"
    return rewrite_base(output, f"{base}{language}/")
