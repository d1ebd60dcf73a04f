"""The per-language search indexes written by docs_hooks/i18n_search.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from site_support import LANGUAGES, ROOT, TRANSLATIONS, BuiltSite, parse, resolve

ZWSP = "\u200b"
HEADING = re.compile(r"^##\s+(.+?)\s*(?:\{[^}]*\})?\s*$", re.M)
FENCE = re.compile(r"^([ \t]*)(```|~~~).*?^\1\2[ \t]*$", re.M | re.S)


def search_index(site: BuiltSite, language: str) -> dict[str, Any]:
    path = site.lang_root(language) / "search" / "search_index.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def locations(site: BuiltSite, language: str) -> list[str]:
    return [doc["location"] for doc in search_index(site, language)["docs"]]


def test_english_index_has_no_translated_duplicates(built_site: BuiltSite) -> None:
    index = search_index(built_site, "en")
    assert index["config"]["lang"] == ["en"]
    found = locations(built_site, "en")
    assert any(loc.startswith("sessions/") for loc in found)
    assert any(loc.startswith("ref/session/") for loc in found)
    foreign = [loc for loc in found if loc.startswith(("ja/", "ko/", "zh/", "../"))]
    assert not [loc for loc in found if loc.startswith("../")]
    assert not foreign
    assert len(found) == len(set(found)), "a location is indexed twice"


def test_language_settings_are_materials_own(built_site: BuiltSite) -> None:
    ja = search_index(built_site, "ja")["config"]
    assert ja["lang"] == ["ja"]
    assert "、" in ja["separator"]
    zh = search_index(built_site, "zh")["config"]
    assert "\\u200b" in zh["separator"]  # a regex escape: jieba's word marks split Chinese
    ko = search_index(built_site, "ko")["config"]
    assert ko["lang"] == ["en"]  # Material has no Korean lunr language; whitespace splits words
    assert ko["pipeline"] == []


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_index_holds_its_own_pages_only(built_site: BuiltSite, language: str) -> None:
    docs = search_index(built_site, language)["docs"]
    titles = {doc["title"].replace(ZWSP, "") for doc in docs}
    for md in sorted((ROOT / "docs" / language).rglob("*.md")):
        text = FENCE.sub("", md.read_text(encoding="utf-8"))
        for heading in HEADING.findall(text):
            plain = re.sub(r"[`*_]", "", heading)
            assert plain in titles, f"{language}/{md.name}: {heading!r} is not searchable"
    for doc in docs:
        assert not doc["location"].startswith(tuple(f"{lang}/" for lang in LANGUAGES))
        assert "undefined" not in doc["location"]


@pytest.mark.parametrize("language", TRANSLATIONS)
def test_translated_index_keeps_every_api_section(built_site: BuiltSite, language: str) -> None:
    english_api = {loc for loc in locations(built_site, "en") if loc.startswith("ref/")}
    translated = set(locations(built_site, language))
    missing = sorted(loc for loc in english_api if loc not in translated)
    assert not missing, f"API sections missing from the {language} index: {missing[:10]}"


@pytest.mark.parametrize("language", ["en", "ja", "ko"])
def test_only_chinese_entries_are_split_for_chinese(built_site: BuiltSite, language: str) -> None:
    docs = search_index(built_site, language)["docs"]
    assert not [doc["location"] for doc in docs if ZWSP in doc["title"] + doc["text"]]
    # Han words are quoted in every language (the translation guide's 既定, 倍), not cut apart.
    assert [doc for doc in docs if "<code>既定</code>" in doc["text"]], "no Han word in the index"


def test_chinese_entries_are_split(built_site: BuiltSite) -> None:
    zh = search_index(built_site, "zh")["docs"]
    han = [doc for doc in zh if re.search(r"[\u4e00-\u9fff]{2}", doc["text"])]
    assert han, "no Chinese text in the zh index"
    assert all(ZWSP in doc["text"] for doc in han), "Chinese text is not segmented (jieba)"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_location_resolves(built_site: BuiltSite, language: str) -> None:
    root = built_site.lang_root(language)
    broken = []
    for location in locations(built_site, language):
        target = resolve(built_site.path, root / "index.html", location or "./")
        assert target is not None
        page, fragment = target
        if not page.is_file() or (fragment and fragment not in parse(page)[0]):
            broken.append(location)
    assert not broken, f"{language}: {broken[:10]}"


def _search_worker(page: str) -> str:
    config = re.search(r'<script id="__config" type="application/json">(.*?)</script>', page, re.S)
    assert config is not None
    worker: str = json.loads(config.group(1))["search"]
    return worker


def test_every_page_searches_with_the_sites_worker_over_materials(built_site: BuiltSite) -> None:
    # The site's worker rewrites queries (CJK words, synonyms, Python names), then runs
    # Material's worker as Material ships it.
    workers = built_site.path / "assets" / "javascripts" / "workers"
    material = next(workers.glob("search.*.min.js")).name
    for url in ("", "ja/", "ja/sessions/", "zh/sessions/", "ko/sessions/", "ref/session/"):
        worker = _search_worker(built_site.page(url).read_text(encoding="utf-8"))
        assert worker.endswith(f"/workers/search_worker.js?material={material}"), (url, worker)
        target = resolve(built_site.path, built_site.page(url), worker.split("?")[0])
        assert target is not None
        assert target[0].is_file(), (url, worker)


def test_chinese_glossary_terms_are_words_of_the_index(built_site: BuiltSite) -> None:
    # jieba cut "智能体" into "智能" + "体" until the glossary's terms were added to its words.
    glossary = yaml.safe_load((ROOT / "docs" / "i18n" / "glossary.yml").read_text(encoding="utf-8"))
    index = search_index(built_site, "zh")
    separator = re.compile(index["config"]["separator"])
    words: set[str] = set()
    text = ""
    for doc in index["docs"]:
        if doc["location"].startswith("ref/"):
            continue
        raw = re.sub(r"<[^>]+>", " ", doc["title"] + " " + doc["text"])
        words.update(separator.split(raw))
        text += raw.replace(ZWSP, "")
    used = [term for term in glossary["terms"]["zh"].values() if term in text]
    assert "智能体" in used
    missing = [term for term in used if term not in words]
    assert not missing, f"glossary terms split by the Chinese segmentation: {missing}"
