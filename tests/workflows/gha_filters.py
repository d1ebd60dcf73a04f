"""GitHub Actions' `branches`/`paths` filter semantics, for proving what triggers a workflow.

Implements the filter pattern syntax documented in "Workflow syntax for GitHub Actions", section
"Filter pattern cheat sheet":

- `*` matches zero or more characters except `/`;
- `**` matches zero or more of any character (`**/` may also match nothing, so `docs/**/*.md`
  matches `docs/README.md` and `**/docs/**` matches `docs/hello.md`);
- `?` matches zero or one of the preceding character, `+` one or more of it;
- `[...]` matches one character listed or in a range;
- `\\` escapes the next character;
- `!` at the start of a pattern negates it.

For a path filter, the patterns are evaluated in order for each changed file and the last pattern
that matches decides (a negative match after a positive one excludes the file, a positive match
after a negative one includes it again). The workflow runs when at least one file is included.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["compile_pattern", "included", "push_triggers", "triggers_on_paths", "workflow_on"]


@lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Translate one filter pattern (without a leading `!`) into an anchored regular expression."""
    atoms: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            atoms.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            atoms.append(".*")
            i += 2
        elif char == "*":
            atoms.append("[^/]*")
            i += 1
        elif char in "?+":
            if not atoms:
                raise ValueError(f"{char!r} has no preceding character in {pattern!r}")
            atoms[-1] = f"(?:{atoms[-1]}){char}"
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                raise ValueError(f"unclosed '[' in {pattern!r}")
            body = pattern[i + 1 : end]
            if not re.fullmatch(r"(?:[A-Za-z0-9](?:-[A-Za-z0-9])?)+", body):
                raise ValueError(f"'[{body}]' may hold only a-z, A-Z, 0-9 and ranges of them")
            atoms.append(f"[{body}]")
            i = end + 1
        elif char == "\\" and i + 1 < len(pattern):
            atoms.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            atoms.append(re.escape(char))
            i += 1
    return re.compile("".join(atoms))


def included(patterns: Sequence[str], path: str) -> bool:
    """Whether `path` passes `patterns`: the last pattern that matches decides."""
    result = False
    for pattern in patterns:
        negative = pattern.startswith("!")
        if compile_pattern(pattern[1:] if negative else pattern).fullmatch(path):
            result = not negative
    return result


def triggers_on_paths(patterns: Sequence[str], changed: Iterable[str]) -> bool:
    """Whether a `paths` filter lets a push or pull request that changed `changed` run."""
    if not any(not p.startswith("!") for p in patterns):
        raise ValueError("a paths filter needs at least one positive pattern")
    return any(included(patterns, path) for path in changed)


def workflow_on(workflow: dict[Any, Any]) -> dict[str, Any]:
    """The `on:` mapping of a parsed workflow (YAML 1.1 reads the bare key `on` as `True`)."""
    on = workflow.get("on", workflow.get(True))
    if not isinstance(on, dict):
        raise ValueError(f"expected `on:` to be a mapping, got {on!r}")
    return on


def push_triggers(workflow: dict[Any, Any], branch: str, changed: Iterable[str]) -> bool:
    """Whether a push of `changed` files to `branch` starts `workflow`.

    Applies the `push` event's `branches`/`branches-ignore` and `paths`/`paths-ignore` filters;
    both kinds must pass.
    """
    on = workflow_on(workflow)
    if "push" not in on:
        return False
    push = on["push"] or {}
    if "branches" in push and not included(push["branches"], branch):
        return False
    if "branches-ignore" in push and included(push["branches-ignore"], branch):
        return False
    changed = list(changed)
    if "paths" in push:
        return triggers_on_paths(push["paths"], changed)
    if "paths-ignore" in push:
        return any(not included(push["paths-ignore"], path) for path in changed)
    return True
