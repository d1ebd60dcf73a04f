"""Compile the theme's templates, and list the theme's files, once for all language builds.

mkdocs-static-i18n runs a whole MkDocs build per language, and each build makes a new Jinja
environment for the theme, which compiled Material's templates again (about a quarter of a
translated build's time). This hook gives every build's environment one in-memory bytecode cache:
Jinja compiles each template once and later builds load the compiled code. Jinja checks each
template's source against its checksum, so an edited template (`mkdocs serve`) is compiled anew.
The environments made outside a page build share it too: Material's search plugin and
docs_hooks/i18n_search.py make one to read a language's search settings (after the last
language, i18n_search compiled `partials/languages/<lang>.html` and the English fallback again
for every language, which the page builds had already compiled).

Each build also lists every file of the theme (Material's thousands of icons included) and
matches each name against MkDocs' patterns for static files, a tenth of a translated build
whose result never changes: the list is kept per theme folders and patterns, and a folder
changed since (a file added to overrides/ under `mkdocs serve`) lists it again.

The translated builds then copied each of those files again, to the same place in the site
(the pages of every language share the site root's assets): a file the English build has just
copied from the same source to the same destination is not copied again. Any other file (a
translation's own image, a file a plugin generates) is copied as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from jinja2 import BytecodeCache
from jinja2.bccache import Bucket
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files, InclusionLevel


class MemoryBytecodeCache(BytecodeCache):
    """Compiled templates kept in memory for the life of the process."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill `bucket` from the cache, if it holds this template."""
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the bucket's compiled code."""
        self._code[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        """Forget every template."""
        self._code.clear()


CACHE = MemoryBytecodeCache()

# (theme folders, static templates, folder mtimes) -> the theme's static files, as listed
_theme_files: dict[tuple[Any, ...], list[str]] = {}
# destination -> source of each file the English build copied
_copied: dict[str, str] = {}


def _custom_dir_times(config: MkDocsConfig) -> tuple[int, ...]:
    """The modification times of the site's own theme folders (the installed theme's are fixed)."""
    custom = config.theme.custom_dir
    if not custom or not os.path.isdir(custom):
        return ()
    return tuple(os.stat(folder).st_mtime_ns for folder, _, _ in os.walk(custom))


def cached_listing(env: Any, config: MkDocsConfig) -> Any:
    """Make `env.list_templates(filter_func=...)` answer from the cache after its first call."""
    original: Callable[..., list[str]] = env.list_templates

    def list_templates(extensions: Any = None, filter_func: Any = None) -> list[str]:
        if extensions is not None or filter_func is None:
            return original(extensions=extensions, filter_func=filter_func)
        dirs = list(dict.fromkeys(config.theme.dirs))  # mkdocs-static-i18n repeats one per build
        key = (tuple(dirs), tuple(config.theme.static_templates), _custom_dir_times(config))
        if key not in _theme_files:
            _theme_files[key] = original(filter_func=filter_func)
        return list(_theme_files[key])

    env.list_templates = list_templates
    return env


@event_priority(100)  # before any template is loaded
def on_env(env: Any, config: MkDocsConfig, files: Any) -> Any:
    """Share the bytecode cache with this build's theme environment."""
    env.bytecode_cache = CACHE
    return env


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """List the theme's files and share the compiled templates in every environment of the theme.

    See the module's docstring; each language's theme too.
    """
    theme = config.theme
    if getattr(theme.get_env, "_lists_once", False):
        return config
    make_env = theme.get_env

    def get_env() -> Any:
        env = cached_listing(make_env(), config)
        env.bytecode_cache = CACHE
        return env

    get_env._lists_once = True  # type: ignore[attr-defined]
    theme.get_env = get_env  # type: ignore[method-assign]
    return config


def _is_default_build(config: MkDocsConfig) -> bool:
    i18n = config.plugins.get("i18n")
    return i18n is None or getattr(i18n, "current_language", None) in (
        None,
        getattr(i18n, "default_language", None),
    )


def _copied_already(file: File) -> bool:
    """True if the English build copied this same source file to the same destination."""
    return (
        file.generated_by is None
        and file.abs_src_path is not None
        and _copied.get(file.abs_dest_path) == file.abs_src_path
        and os.path.isfile(file.abs_dest_path)
    )


@event_priority(-300)  # after mkdocs-static-i18n (-100) has made this language's files
def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Copy each static file once for all languages (see the module's docstring)."""
    default = _is_default_build(config)
    if default:
        _copied.clear()

    def copy_static_files(
        dirty: bool = False,
        *,
        inclusion: Callable[[InclusionLevel], bool] = InclusionLevel.is_included,
    ) -> None:
        for file in files:
            if file.is_documentation_page() or not inclusion(file.inclusion):
                continue
            if not default and _copied_already(file):
                continue
            file.copy_file(dirty)
            if default and file.generated_by is None and file.abs_src_path is not None:
                _copied[file.abs_dest_path] = file.abs_src_path

    files.copy_static_files = copy_static_files  # type: ignore[method-assign]
    return files
