"""Keep Python's full garbage collections off the English build's objects while translations build.

mkdocs-static-i18n builds the translations in the same process, after the English build, whose
objects (the loaded API, the rendered reference, autorefs' maps, compiled templates) stay alive
for all of them. Each full collection during a translated build walked that whole heap again,
about a tenth of a translated build, to find no garbage in it. So when the English build is done
and translations follow, its objects are frozen (`gc.freeze()`: collections leave them alone),
and unfrozen once every language is built; objects made by the translated builds are collected
as usual. An English-only build is not touched.
"""

from __future__ import annotations

import gc

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority

_frozen = False


def _translations_follow(config: MkDocsConfig) -> bool:
    i18n = config.plugins.get("i18n")
    return (
        i18n is not None
        and not i18n.building
        and i18n.current_language == i18n.default_language
        and len(i18n.build_languages) > 1
    )


@event_priority(-90)  # in the English build, just before mkdocs-static-i18n (-100) builds the rest
def freeze_english_heap(config: MkDocsConfig) -> None:
    """Freeze what the English build leaves alive, if translations are built next."""
    global _frozen
    if not _frozen and _translations_follow(config):
        gc.freeze()
        _frozen = True


@event_priority(-250)  # after mkdocs-static-i18n has built every language
def unfreeze(config: MkDocsConfig) -> None:
    """Collections see every object again (`mkdocs serve` rebuilds in the same process)."""
    global _frozen
    i18n = config.plugins.get("i18n")
    if _frozen and (i18n is None or not i18n.building):
        gc.unfreeze()
        _frozen = False


def on_build_error(error: Exception) -> None:
    """A failed build unfreezes too."""
    global _frozen
    if _frozen:
        gc.unfreeze()
        _frozen = False


on_post_build = CombinedEvent(freeze_english_heap, unfreeze)
