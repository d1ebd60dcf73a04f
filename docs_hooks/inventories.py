"""Link standard-library types in the API reference, without a network.

mkdocstrings links a type in a signature or a docstring (`Mapping`, `Path`, `datetime`) to its
documentation when an object inventory (Sphinx's `objects.inv`) lists it. The usual setting
downloads Python's inventory at every build; the site builds offline, so the inventory of the
Python 3.11 documentation ships with the hooks (`inventories/python3.11.inv`, from Debian's
`python3.11-doc` package) and this hook hands it to mkdocstrings' Python handler as a `file:` URL,
with links pointing at the published documentation (`https://docs.python.org/3/`).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority

INVENTORY = Path(__file__).with_name("inventories") / "python3.11.inv"
BASE_URL = "https://docs.python.org/3/"


def python_inventory() -> dict[str, str]:
    """The inventory entry for mkdocstrings' Python handler (`url`, `base_url`)."""
    return {"url": INVENTORY.resolve().as_uri(), "base_url": BASE_URL}


@event_priority(100)  # before mkdocstrings (0) starts loading the inventories it is given
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Add the local Python inventory to the Python handler's inventories."""
    plugin = config.plugins.get("mkdocstrings")
    if plugin is None:
        return config
    handlers = plugin.config["handlers"]
    python = handlers.setdefault("python", {})
    inventories = python.setdefault("inventories", [])
    entry = python_inventory()
    if not any(isinstance(i, dict) and i.get("url") == entry["url"] for i in inventories):
        inventories.append(entry)
    return config
