"""Site-wide pieces that each language needs: its 404 page, its sitemap, hreflang, its footer.

mkdocs-static-i18n builds every language into the same site folder, one build after the other, and
each build writes the site's `404.html` and `sitemap.xml` again: the last language (Chinese) won,
so GitHub Pages answered every missing URL in Chinese. Material's language switcher, for its part,
fetches `sitemap.xml` beside every `<link rel="alternate">` of a page (`/ja/sessions/sitemap.xml`,
...), 404s on every page load, and then lost the reader's `#anchor`.

This hook

1. gives each language its own 404 page (overrides/404.html: a sentence in the language and links
   to every language's home page): the English one at the site root, the others at
   `<lang>/404.html`. GitHub Pages serves only the root one, for every missing URL: its script
   loads the 404 page of the language the missing URL's path starts with (`/ja/nope/`: the
   Japanese one, with its navigation, search and footer); without JavaScript it stays English
   and still links to every language's home;
2. leaves the `<link rel="alternate" hreflang>` tags out of the pages' `<head>` and declares the
   alternates, `x-default` (the English page) included, in `sitemap.xml`, which search engines
   read for hreflang as well. Material then fetches only the sitemap of the page's own language
   root, which this hook writes too (`<lang>/sitemap.xml`, that language's pages);
3. the switcher's links carry the current `#anchor` (overrides/assets/javascripts/
   language_switcher.js): every translation keeps the English heading ids;
4. the footer's "Made with Material for MkDocs" in the page's language (overrides/partials/
   copyright.html; the copyright line itself is translated in mkdocs.yml), a language's home
   page titled like the English one (the site's name, not "ホーム - turnstore"), and
   mkdocstrings' stylesheet linked once (it adds it again in every language build, and autorefs
   and mkdocstrings their Markdown extensions).

It relies on mkdocs-static-i18n's `current_language`, `default_language`, `building` and
`extra_alternate` (the language homes); the plugin's version is pinned in pyproject.toml.
"""

from __future__ import annotations

import copy
import gzip
import os
import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.pages import Page
from mkdocs.utils import write_file

NOT_FOUND = "404.html"
SITEMAP = "sitemap.xml"
# language -> (title, sentence) of the 404 page
NOT_FOUND_TEXT: dict[str, tuple[str, str]] = {
    "en": ("Page not found", "This page does not exist. The documentation starts here:"),
    "ja": (
        "ページが見つかりません",
        "このページは存在しません。ドキュメントのトップページはこちらです。",
    ),
    "ko": (
        "페이지를 찾을 수 없습니다",
        "이 페이지는 없습니다. 문서의 첫 페이지는 여기에 있습니다.",
    ),
    "zh": ("找不到页面", "此页面不存在。文档首页如下："),
}
# language -> (before, after) the "Material for MkDocs" link in the footer
MADE_WITH: dict[str, tuple[str, str]] = {
    "en": ("Made with", ""),
    "ja": ("", "で作成"),
    "ko": ("", "로 만들었습니다"),
    "zh": ("使用", "构建"),
}
# Material's head tags for the language alternates (not the RSS feeds, which have a type).
_HEAD_ALTERNATE = re.compile(r'[ \t]*<link rel="alternate" href="[^"]*" hreflang="[^"]*">\n?')
_URL = re.compile(r"<url>.*?</url>", re.S)
_LOC = re.compile(r"<loc>([^<]*)</loc>")
_ALTERNATE = re.compile(r'<xhtml:link rel="alternate" hreflang="([\w-]+)" href="([^"]*)"/>')

# The English 404 page, kept while the other languages build (each overwrites the root one).
_english_404: bytes | None = None


def _i18n(config: MkDocsConfig) -> Any:
    return config.plugins["i18n"]


def language_homes(config: MkDocsConfig) -> Any:
    """Every built language's home page: `name`, `lang` and `link` (from the site root)."""
    return copy.deepcopy(_i18n(config).extra_alternate or [])


def without_head_alternates(output: str) -> str:
    """The page without Material's `<link rel="alternate" hreflang>` tags in its head."""
    head_end = output.find("</head>")
    if head_end < 0:
        return output
    return _HEAD_ALTERNATE.sub("", output[:head_end]) + output[head_end:]


@event_priority(-100)  # after mkdocstrings and autorefs (0) have added their pieces again
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Keep one of each stylesheet and Markdown extension that a language build adds again.

    Every language build runs the plugins' `on_config` again on the same configuration:
    mkdocstrings adds its stylesheet (linked four times on Chinese pages) and, like autorefs,
    its Markdown extension (set up four times for every Chinese page). The last one added is
    kept.
    """
    config.extra_css[:] = list(dict.fromkeys(config.extra_css))
    extensions = config.markdown_extensions
    last = {type(e): e for e in extensions if not isinstance(e, str)}
    config.markdown_extensions[:] = [
        e for e in extensions if isinstance(e, str) or last[type(e)] is e
    ]
    return config


def on_env(env: Any, config: MkDocsConfig, files: Any) -> Any:
    """Give the 404 template and the footer their text in the language being built."""
    i18n = _i18n(config)
    language = i18n.current_language
    title, sentence = NOT_FOUND_TEXT.get(language, NOT_FOUND_TEXT["en"])
    config.extra["not_found"] = {"title": title, "sentence": sentence}
    config.extra["language_homes"] = language_homes(config)
    before, after = MADE_WITH.get(language, MADE_WITH["en"])
    config.extra["made_with"] = {"before": before, "after": after}
    return env


def on_page_context(
    context: dict[str, Any], page: Page, config: MkDocsConfig, nav: Any
) -> dict[str, Any]:
    """A language's home page is titled with the site's name alone, as the English one is."""
    source = str(getattr(page.file, "norm_src_uri", page.file.src_uri))
    context["is_language_home"] = source == "index.md"
    return context


def on_template_context(
    context: dict[str, Any], template_name: str, config: MkDocsConfig
) -> dict[str, Any]:
    """The 404 page's switcher offers the language homes (not the last page's alternates).

    mkdocs-static-i18n sets the switcher's links per page as an attribute of `config.extra`
    (`config.extra.alternate = ...`), which Jinja reads before the mapping's item: both are
    replaced, or a translated 404 page kept the links of the last page built (`/ja/ref/tools/`).
    """
    if template_name == NOT_FOUND:
        homes = language_homes(config)
        config.extra["alternate"] = homes
        if "alternate" in vars(config.extra):
            config.extra.alternate = homes
    return context


@event_priority(-130)  # after the search hooks have rewritten the page's config
def on_post_page(output: str, page: Page, config: MkDocsConfig) -> str:
    """Hreflang lives in the sitemap, not in the head (see the module's docstring)."""
    return without_head_alternates(output)


def on_post_template(output: str, template_name: str, config: MkDocsConfig) -> str:
    """The 404 page too."""
    if template_name == NOT_FOUND:
        return without_head_alternates(output)
    return output


@event_priority(50)  # before mkdocs-static-i18n (0) starts the next language's build
def keep_404_pages(config: MkDocsConfig) -> None:
    """Move a translated build's 404 page under its prefix; keep the English one."""
    global _english_404
    i18n = _i18n(config)
    path = os.path.join(config.site_dir, NOT_FOUND)
    if not os.path.isfile(path):
        return
    if i18n.current_language == i18n.default_language:
        with open(path, "rb") as file:
            _english_404 = file.read()
        return
    target = os.path.join(config.site_dir, i18n.current_language, NOT_FOUND)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.replace(path, target)


def with_x_default(sitemap: str, default: str) -> str:
    """Add an `x-default` alternate (the default language's page) to every `<url>`."""

    def add(match: re.Match[str]) -> str:
        block = match.group(0)
        alternates = dict(_ALTERNATE.findall(block))
        if default not in alternates or "x-default" in alternates:
            return block
        tag = f'<xhtml:link rel="alternate" hreflang="x-default" href="{alternates[default]}"/>'
        indent = re.search(r"\n([ \t]*)<xhtml:link", block)
        pad = indent.group(1) if indent else "        "
        end = block.rindex("</url>")
        line_start = block.rfind("\n", 0, end) + 1
        return block[:line_start] + f"{pad}{tag}\n" + block[line_start:]

    return _URL.sub(add, sitemap)


def language_sitemap(sitemap: str, site_url: str, language: str, languages: list[str]) -> str:
    """The sitemap restricted to one language's pages (`<url>` blocks by their `<loc>`)."""
    others = tuple(f"{site_url}{lang}/" for lang in languages if lang != language)
    own = f"{site_url}{language}/"

    def keep(block: str) -> bool:
        loc = _LOC.search(block)
        if loc is None:
            return False
        url = loc.group(1)
        return url.startswith(own) if language != languages[0] else not url.startswith(others)

    blocks = _URL.findall(sitemap)
    head = sitemap[: sitemap.index("<url>")] if blocks else sitemap
    tail = sitemap[sitemap.rindex("</url>") + len("</url>") :] if blocks else ""
    kept = [block for block in blocks if keep(block)]
    return head + "\n    ".join(kept) + tail


def _write_sitemap(path: str, text: str) -> None:
    data = text.encode("utf-8")
    write_file(data, path)
    write_file(gzip.compress(data, mtime=0), path + ".gz")


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def finish_site(config: MkDocsConfig) -> None:
    """Restore the English 404 page; write the sitemaps with x-default and per language."""
    i18n = _i18n(config)
    if i18n.building:
        return
    if _english_404 is not None:
        write_file(_english_404, os.path.join(config.site_dir, NOT_FOUND))
    path = os.path.join(config.site_dir, SITEMAP)
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as file:
        sitemap = with_x_default(file.read(), i18n.default_language)
    _write_sitemap(path, sitemap)
    site_url = config.site_url or ""
    if not site_url.endswith("/"):
        site_url += "/"
    languages = [i18n.default_language] + [
        lang for lang in i18n.build_languages if lang != i18n.default_language
    ]
    for language in languages[1:]:
        own = language_sitemap(sitemap, site_url, language, languages)
        _write_sitemap(os.path.join(config.site_dir, language, SITEMAP), own)


on_post_build = CombinedEvent(keep_404_pages, finish_site)
