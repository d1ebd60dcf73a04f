"""Link standard-library types in the API reference, without a network.

mkdocstrings links a type in a signature or a docstring (`Mapping`, `Path`, `datetime`) to its
documentation when an object inventory (Sphinx's `objects.inv`) lists it. The usual setting
downloads Python's inventory at every build; the site builds offline, so the inventory of the
Python 3.11 documentation ships with the hooks (`inventories/python3.11.inv`, from Debian's
`python3.11-doc` package) and this hook hands it to mkdocstrings' Python handler as a `file:` URL,
with links pointing at the published documentation (`https://docs.python.org/3/`). Only the
English build, which renders the API, loads it: the translated builds render no docstring, and
mkdocstrings read and parsed the whole inventory again in each of them (a tenth of a translated
build). mkdocs-autorefs keeps the links it was given (its version is pinned) for every build,
so a translated page's reference to a standard-library object still resolves.

It also keeps the site's own inventory (`objects.inv`, which other projects' Sphinx intersphinx
or mkdocstrings read to link to our API) whole: mkdocstrings writes it in every language build,
and the translated builds, which show the English reference without rendering it again
(docs_hooks/i18n_ref_once.py), wrote an empty one over it. The English build's inventory is kept
and written back once every language is built, with the package's version instead of
mkdocstrings' "0.0.0".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.utils import write_file

from release import package_version

INVENTORY = Path(__file__).with_name("inventories") / "python3.11.inv"
BASE_URL = "https://docs.python.org/3/"
OBJECTS_INV = "objects.inv"

# The English build's objects.inv, written back after the translated builds.
_english_inventory: bytes | None = None


def python_inventory() -> dict[str, str]:
    """The inventory entry for mkdocstrings' Python handler (`url`, `base_url`)."""
    return {"url": INVENTORY.resolve().as_uri(), "base_url": BASE_URL}


def _is_default_build(config: MkDocsConfig) -> bool:
    i18n = _i18n(config)
    # The first build runs before mkdocs-static-i18n (on_config -100) has set its language.
    return i18n is None or i18n.current_language in (None, i18n.default_language)


@event_priority(100)  # before mkdocstrings (0) starts loading the inventories it is given
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Give the Python handler the local Python inventory, in the English build only."""
    plugin = config.plugins.get("mkdocstrings")
    if plugin is None:
        return config
    handlers = plugin.config["handlers"]
    python = handlers.setdefault("python", {})
    inventories = python.setdefault("inventories", [])
    entry = python_inventory()
    inventories[:] = [
        i for i in inventories if not (isinstance(i, dict) and i.get("url") == entry["url"])
    ]
    if _is_default_build(config):
        inventories.append(entry)
    return config


@event_priority(-10)  # before mkdocstrings (-20) writes objects.inv
def on_env(env: Any, config: MkDocsConfig, files: Any) -> Any:
    """The site's inventory names the package's version."""
    handlers = getattr(config.plugins.get("mkdocstrings"), "_handlers", None)
    if handlers is not None:
        handlers.inventory.version = package_version(config)
    return env


def _i18n(config: MkDocsConfig) -> Any:
    return config.plugins.get("i18n")


@event_priority(50)  # in each language's build, before mkdocs-static-i18n starts the next
def keep_english_inventory(config: MkDocsConfig) -> None:
    """Keep the inventory of the English build, which renders the API."""
    global _english_inventory
    i18n = _i18n(config)
    path = os.path.join(config.site_dir, OBJECTS_INV)
    if i18n is not None and i18n.current_language != i18n.default_language:
        return
    if os.path.isfile(path):
        with open(path, "rb") as file:
            _english_inventory = file.read()


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def restore_english_inventory(config: MkDocsConfig) -> None:
    """Write the English inventory back over the translated builds' empty ones."""
    i18n = _i18n(config)
    if (i18n is not None and i18n.building) or _english_inventory is None:
        return
    write_file(_english_inventory, os.path.join(config.site_dir, OBJECTS_INV))


on_post_build = CombinedEvent(keep_english_inventory, restore_english_inventory)
