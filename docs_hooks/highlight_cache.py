"""Highlight each code block once for all language builds.

The translated pages hold the English pages' code blocks, unchanged, and Pygments highlighted
every one of them again in each language build (a tenth of a translated build). This hook keeps
the HTML of each highlighted block, keyed by all that decides it: the highlighter's settings, the
code, its language and options, and the block's number on its page (which names its line
anchors), and hands it back when the same block comes again. Inline code, and titles rendered as
HTML (they go through the page's own stash), are highlighted as before.

It wraps `pymdownx.highlight.Highlight.highlight`; if a pymdown-extensions release changes that
method's parameters, the build stops (`PluginError`) rather than cache on a key it does not know.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from pymdownx.highlight import Highlight

# The parameters of Highlight.highlight this key was written for (pymdown-extensions 10 to 13).
KNOWN_PARAMETERS = (
    "self",
    "src",
    "language",
    "css_class",
    "hl_lines",
    "linestart",
    "linestep",
    "linespecial",
    "inline",
    "classes",
    "id_value",
    "attrs",
    "title",
    "code_block_count",
)
# Blocks kept (the site has a few hundred; `mkdocs serve` edits would add more).
MAX_BLOCKS = 4096

_ORIGINAL = Highlight.highlight
_SIGNATURE = inspect.signature(_ORIGINAL)
_blocks: OrderedDict[str, str] = OrderedDict()


def block_key(highlighter: Highlight, arguments: dict[str, Any]) -> str:
    """Everything that decides a block's HTML: the highlighter's settings and the arguments."""
    settings = sorted(
        (name, repr(value)) for name, value in vars(highlighter).items() if name != "md"
    )
    return repr((settings, sorted((name, repr(value)) for name, value in arguments.items())))


def cached_highlight(self: Highlight, *args: Any, **kwargs: Any) -> Any:
    """`Highlight.highlight`, answered from the blocks already highlighted when it can be."""
    bound = _SIGNATURE.bind(self, *args, **kwargs)
    bound.apply_defaults()
    arguments = {name: value for name, value in bound.arguments.items() if name != "self"}
    if arguments["inline"] or getattr(self, "title_mode", "text") == "html":
        return _ORIGINAL(self, *args, **kwargs)
    key = block_key(self, arguments)
    html = _blocks.get(key)
    if html is None:
        html = _ORIGINAL(self, *args, **kwargs)
        if not isinstance(html, str):
            return html
        _blocks[key] = html
        if len(_blocks) > MAX_BLOCKS:
            _blocks.popitem(last=False)
    else:
        _blocks.move_to_end(key)
    return html


def check_signature() -> None:
    """Stop the build if Highlight.highlight's parameters are not the ones the key covers."""
    found = tuple(_SIGNATURE.parameters)
    if found != KNOWN_PARAMETERS:
        raise PluginError(
            "highlight_cache: pymdownx.highlight.Highlight.highlight now takes "
            f"{found}, not {KNOWN_PARAMETERS}; check what decides a block's HTML and update"
            " docs_hooks/highlight_cache.py"
        )


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Put the caching highlighter in place (once; every language build runs this)."""
    check_signature()
    Highlight.highlight = cached_highlight  # type: ignore[method-assign]
    return config


def on_shutdown() -> None:
    """Give pymdown-extensions its own method back."""
    Highlight.highlight = _ORIGINAL  # type: ignore[method-assign]
    _blocks.clear()
