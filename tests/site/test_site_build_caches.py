"""The hooks that do work once for all language builds give what the uncached work gives."""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jinja2
import markdown
import pytest
from material.plugins.search.plugin import SearchIndex
from mkdocs.exceptions import PluginError
from pymdownx.superfences import fence_code_format
from site_support import ROOT

PAGE = """\
# Title

Some prose with `inline` code.

```python title="example.py"
def greet(name: str) -> str:
    return f"hello {name}"  # a comment
```

```mermaid
sequenceDiagram
    App->>Store: add_items
```

## Second {#second}

```python
greet("x")
```
"""

EXTENSIONS = [
    "attr_list",
    "toc",
    "pymdownx.highlight",
    "pymdownx.inlinehilite",
    "pymdownx.superfences",
]
CONFIGS: dict[str, dict[str, Any]] = {
    "pymdownx.highlight": {
        "anchor_linenums": True,
        "line_spans": "__span",
        "pygments_lang_class": True,
    },
    "pymdownx.superfences": {
        "custom_fences": [
            {
                "name": "mermaid",
                "class": "mermaid",
                "format": fence_code_format,
            }
        ]
    },
}


def load_hook(name: str) -> ModuleType:
    """Import docs_hooks/<name>.py as MkDocs does (the folder's other hooks importable)."""
    spec = importlib.util.spec_from_file_location(
        f"test_{name}", ROOT / "docs_hooks" / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render(text: str) -> str:
    return markdown.markdown(text, extensions=EXTENSIONS, extension_configs=CONFIGS)


@pytest.fixture
def highlight_cache() -> Iterator[ModuleType]:
    module = load_hook("highlight_cache")
    module.on_config(None)
    try:
        yield module
    finally:
        module.on_shutdown()


def test_cached_code_blocks_are_the_uncached_html(highlight_cache: ModuleType) -> None:
    highlight_cache.on_shutdown()
    uncached = render(PAGE)
    highlight_cache.on_config(None)
    first = render(PAGE)
    assert highlight_cache._blocks, "no code block went through the cache"
    again = render(PAGE)  # every block from the cache now
    assert first == uncached
    assert again == uncached


def test_a_block_keeps_its_own_number_on_the_page(highlight_cache: ModuleType) -> None:
    # The same code as the first and as the second block: line anchors name the block's number.
    block = '```python\nprint("x")\n```\n'
    html = render(block + "\n" + block)
    assert 'id="__span-0-1"' in html
    assert 'id="__span-1-1"' in html


def test_an_unknown_highlighter_signature_stops_the_build(
    highlight_cache: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = (*highlight_cache.KNOWN_PARAMETERS, "added")
    monkeypatch.setattr(highlight_cache, "KNOWN_PARAMETERS", known)
    with pytest.raises(PluginError, match=r"Highlight\.highlight now takes"):
        highlight_cache.on_config(None)


def test_search_entries_are_the_same_without_the_listings_insides() -> None:
    search_prose = load_hook("search_prose")
    content = search_prose.exclude_listings(render(PAGE))
    full = SearchIndex()
    full.add_entry_from_context(_Page(content))
    light_content, insides = search_prose.set_listings_aside(content)
    assert len(insides) == 3  # the two listings and the diagram
    assert len(light_content) < len(content) / 2
    light = SearchIndex()
    light.add_entry_from_context(_Page(light_content))
    assert light.entries == full.entries
    assert search_prose.put_listings_back(light_content, insides) == content


class _Page:
    """What Material's search index reads of a page."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.meta: dict[str, Any] = {}
        self.toc: list[Any] = []
        self.url = "page/"
        self.title = "Title"


class _I18n:
    """What heap_freeze reads of mkdocs-static-i18n."""

    def __init__(self, languages: list[str]) -> None:
        self.building = False
        self.default_language = "en"
        self.current_language = "en"
        self.build_languages = languages


class _Config:
    def __init__(self, i18n: _I18n) -> None:
        self.plugins = {"i18n": i18n}


@pytest.mark.parametrize(
    ("languages", "frozen"), [(["en", "ja", "ko", "zh"], True), (["en"], False)]
)
def test_the_english_heap_is_frozen_while_translations_build(
    languages: list[str], frozen: bool
) -> None:
    heap_freeze = load_hook("heap_freeze")
    i18n = _I18n(languages)
    config = _Config(i18n)
    assert gc.get_freeze_count() == 0
    try:
        # The English build's post_build, in MkDocs' order: this hook (-90), then
        # mkdocs-static-i18n (-100) builds each translation, then this hook again (-250).
        heap_freeze.freeze_english_heap(config)
        assert (gc.get_freeze_count() > 0) is frozen
        i18n.building = True
        for language in languages[1:]:
            i18n.current_language = language
            heap_freeze.freeze_english_heap(config)
            heap_freeze.unfreeze(config)
            assert (gc.get_freeze_count() > 0) is frozen, f"unfrozen after the {language} build"
        i18n.building = False
        heap_freeze.unfreeze(config)
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()


class _Theme:
    """What jinja_cache reads of MkDocs' theme: a fresh environment from each get_env()."""

    dirs: list[str] = []
    static_templates: list[str] = []
    custom_dir = None

    def get_env(self) -> jinja2.Environment:
        return jinja2.Environment(loader=jinja2.DictLoader({"t.html": "{{ 6 * 7 }}"}))


class _ThemeConfig:
    def __init__(self) -> None:
        self.theme = _Theme()


def test_every_theme_environment_loads_templates_compiled_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Material's search plugin and i18n_search make environments of their own.
    jinja_cache = load_hook("jinja_cache")
    config = _ThemeConfig()
    jinja_cache.on_config(config)
    assert config.theme.get_env().get_template("t.html").render() == "42"

    def no_compiling(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a template compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", no_compiling)
    assert config.theme.get_env().get_template("t.html").render() == "42"
