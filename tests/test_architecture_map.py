"""The architecture page's map of the code ("Where the code lives") stays true.

The section `{#layout}` of docs/architecture.md is a nested Markdown list: each item starts with
the inline-code path of a folder or file, relative to the folder of the item it sits under (the
top items are relative to the repository root), then says what it holds. Code spans in its prose
that look like paths (a `/` or a file extension) are references: they resolve against the item's
folder, that folder's parents, then the repository root (a bare file name may live anywhere).

Two promises, checked here:

- every Python module and package under `src/turnstore/` and `scripts/docs_i18n/`, and every
  file in `bench/`, is named in the section (a package by its folder; its `__init__.py` with it);
- every path the section names exists in the repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
COVERED_TREES = ("src/turnstore", "scripts/docs_i18n")
COVERED_FILES = ("bench",)

_ITEM = re.compile(r"^(?P<indent> *)- (?P<text>.*)$")
_LEADING_PATH = re.compile(r"^`(?P<path>[^`]+)`(?::|$)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_PATH_LIKE = re.compile(r"^\.?[\w<>.-]+(?:/[\w<>.-]+)*/?$")
_FILE_EXTENSION = re.compile(r"\.(?:py|md|yml|yaml|json|toml|sh|js|css|html|txt|inv)$")


@dataclass
class Entry:
    """One list item of the map: the path it names and the paths its prose refers to."""

    path: str
    folder: str
    line: int
    refs: list[str] = field(default_factory=list)


def layout_section(text: str) -> list[str]:
    """The lines of the section whose heading carries `{#layout}`, without the heading."""
    lines = text.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("## ") and "{#layout}" in line
    )
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def is_path(span: str) -> bool:
    """Whether an inline code span names a path (not a command, a class or a dotted name)."""
    return bool(_PATH_LIKE.match(span)) and ("/" in span or bool(_FILE_EXTENSION.search(span)))


def parse_map(lines: list[str]) -> tuple[list[Entry], list[str], list[str]]:
    """The entries of the map, the references outside any item, and the items naming no path."""
    entries: list[Entry] = []
    loose_refs: list[str] = []
    problems: list[str] = []
    stack: list[tuple[int, Entry]] = []  # (indent, entry) of the open items
    current: Entry | None = None
    in_fence = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _ITEM.match(line)
        if match:
            indent = len(match["indent"])
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1].folder if stack else ""
            lead = _LEADING_PATH.match(match["text"])
            if lead is None or not is_path(lead["path"]):
                problems.append(f"line {number}: an item that names no path: {line.strip()}")
                current = None
                continue
            name = lead["path"]
            path = str(PurePosixPath(parent, name.rstrip("/"))) if parent else name.rstrip("/")
            folder = path if name.endswith("/") else parent
            current = Entry(path, folder, number)
            entries.append(current)
            stack.append((indent, current))
            text = match["text"][lead.end() :]
        else:
            text = line
            if line.strip() and not line.startswith(" "):  # a paragraph: the list is over
                current = None
                stack.clear()
        refs = [span for span in _CODE_SPAN.findall(text) if is_path(span)]
        if current is None:
            loose_refs.extend(refs)
        else:
            current.refs.extend(refs)
    return entries, loose_refs, problems


def _exists(relative: str) -> bool:
    if "<" in relative:  # a pattern such as tests/<component>/: one match is enough
        pattern = re.sub(r"<[^>]+>", "*", relative.rstrip("/"))
        return any(ROOT.glob(pattern))
    return (ROOT / relative).exists()


def resolve(ref: str, folder: str) -> str | None:
    """Where a reference made under `folder` points, or None when it names nothing there."""
    bare = ref.rstrip("/")
    chain = [str(p) for p in (PurePosixPath(folder), *PurePosixPath(folder).parents)]
    for base in [*chain, ""]:
        candidate = str(PurePosixPath(base, bare)) if base not in ("", ".") else bare
        if _exists(candidate):
            return candidate
    if "/" not in bare:  # a bare file name, such as a workflow named in the tests' entry
        skip = {".git", ".venv", "site"}
        found = sorted(p for p in ROOT.rglob(bare) if not skip & set(p.relative_to(ROOT).parts))
        if found:
            return found[0].relative_to(ROOT).as_posix()
    return None


def required_names() -> set[str]:
    """What the map must name: modules and packages of the covered trees, bench/'s files."""
    required: set[str] = set()
    for tree in COVERED_TREES:
        required.add(tree)
        for module in (ROOT / tree).rglob("*.py"):
            relative = module.relative_to(ROOT)
            if "__pycache__" in relative.parts:
                continue
            # A package is named by its folder, which stands for its __init__.py too.
            required.add(str(relative.parent if module.name == "__init__.py" else relative))
    for folder in COVERED_FILES:
        for path in (ROOT / folder).rglob("*"):
            relative = path.relative_to(ROOT)
            if path.is_file() and "__pycache__" not in relative.parts:
                required.add(relative.as_posix())
    return required


def named_paths() -> tuple[set[str], list[str]]:
    """The paths the map names (entries and resolved references), and what it names in vain."""
    entries, loose_refs, problems = parse_map(layout_section(PAGE.read_text(encoding="utf-8")))
    named: set[str] = set()
    stale = list(problems)
    for entry in entries:
        if _exists(entry.path):
            named.add(entry.path)
        else:
            stale.append(f"line {entry.line}: the entry `{entry.path}` does not exist")
        for ref in entry.refs:
            target = resolve(ref, entry.folder)
            if target is None:
                stale.append(f"line {entry.line}: `{ref}` (under `{entry.path}`) does not exist")
            else:
                named.add(target)
    for ref in loose_refs:
        target = resolve(ref, "")
        if target is None:
            stale.append(f"`{ref}` does not exist")
        else:
            named.add(target)
    return named, stale


def test_every_module_and_benchmark_is_on_the_map() -> None:
    named, _ = named_paths()
    missing = sorted(required_names() - named)
    assert not missing, (
        "docs/architecture.md, 'Where the code lives', does not name: "
        + ", ".join(missing)
        + " (add each under its folder's entry, and mirror the section in docs/ja, ko, zh)"
    )


def test_every_path_on_the_map_exists() -> None:
    _, stale = named_paths()
    assert not stale, "docs/architecture.md, 'Where the code lives':\n" + "\n".join(stale)


def test_the_map_reads_paths_and_notes_apart() -> None:
    """The parser itself: nesting, relative paths, references up the folder chain."""
    lines = [
        "Intro naming `mkdocs.yml`.",
        "",
        "- `src/turnstore/`: the package.",
        "    - `memory/`: sessions (`tests/test_import_graph.py` checks it).",
        "        - `codec.py`: codec,",
        "          see `session.py` and `history.py`.",
        "    - `runner.py`: uses `memory/history.py`.",
        "- `bench/`: benchmarks.",
        "- Not a path.",
    ]
    entries, loose, problems = parse_map(lines)
    assert [e.path for e in entries] == [
        "src/turnstore",
        "src/turnstore/memory",
        "src/turnstore/memory/codec.py",
        "src/turnstore/runner.py",
        "bench",
    ]
    assert entries[2].refs == ["session.py", "history.py"]
    assert entries[2].folder == "src/turnstore/memory"
    assert loose == ["mkdocs.yml"]
    assert problems == ["line 9: an item that names no path: - Not a path."]
    assert resolve("memory/history.py", "src/turnstore") == "src/turnstore/memory/history.py"
    graph = "tests/test_import_graph.py"
    assert resolve(graph, "src/turnstore/memory") == graph
    assert resolve("memory/nothing.py", "src/turnstore") is None
