"""Structure checks of a translation against its English source: code, not trust.

`check_section` compares a masked draft section with the masked English section and returns
concrete findings (empty when the draft is sound). `verify_page` does the same for a whole
translated page on disk (hand-written or machine-made), including the pinned heading ids and the
front matter keys.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from .front_matter import split_front_matter
from .headings import english_heading_ids, find_headings
from .markdown_mask import MERMAID_LABELS_RE, PLACEHOLDER_RE, Masked, mask, mermaid_skeleton, unmask
from .prompt import Glossary, name_pattern, phrase_pattern
from .rules import LanguageRules, Located, Units
from .sections import split_sections

__all__ = [
    "LATIN_RUN_WORDS",
    "AlignedPage",
    "Structure",
    "TermUse",
    "align_code",
    "align_page",
    "check_meaning",
    "check_section",
    "meaning_findings",
    "numbers",
    "page_form_findings",
    "paragraph_count",
    "paragraph_split_only",
    "prose",
    "structure",
    "swapped_sections",
    "term_uses",
    "unrendered_blocks",
    "untranslated_runs",
    "verify_page",
]

_LINK_TARGET = re.compile(
    r"\]\(\s*<?(?P<url>[^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REF_LABEL = re.compile(r"\]\[(?P<label>[^\]]+)\]")
_COLLAPSED_REF = re.compile(r"\[(?P<label>[^\]^][^\]]*)\]\[\]")
_FOOTNOTE = re.compile(r"\[\^(?P<name>[^\]]+)\]")
_REF_DEFINITION = re.compile(
    r"^[ \t]{0,3}\[(?P<label>[^\]^][^\]]*)\]:[ \t]*<?(?P<url>\S+?)>?(?:[ \t]+.*)?$", re.M
)
_AUTOLINK = re.compile(r"<(?P<url>(?:https?|mailto|ftp):[^>\s]+)>")
_HTML_URL = re.compile(r"\b(?:href|src)\s*=\s*(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)')", re.I)
_ICON = re.compile(r":(?P<icon>(?:material|octicons|fontawesome|simple)-[a-z0-9-]+):")
_HTML_TAG = re.compile(r"<(?P<tag>/?[a-zA-Z][\w-]*)(?=[\s/>])")
_ADMONITION = re.compile(
    r"^(?P<indent>[ \t]*)(?P<marker>!!!|\?\?\?\+?)[ \t]*(?P<kind>[^\"\n]*?)[ \t]*(?:\"|$)", re.M
)
_TAB = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>===\+?)[ \t]+\"", re.M)
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
_LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?P<bullet>[-*+]|\d+[.)])[ \t]+\S", re.M)


@dataclass
class Structure:
    """What a (masked) Markdown text is made of, as far as the checks care."""

    placeholders: Counter[str]
    block_lines: dict[str, tuple[str, bool]]
    heading_levels: list[int]
    heading_texts: list[str]
    targets: Counter[str]
    markers: list[tuple[str, str, str]]
    tables: list[tuple[int, ...]]
    list_items: list[tuple[str, str]]
    html_tags: Counter[str]


def _table_shapes(lines: list[str]) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []
    i = 1
    while i < len(lines):
        if _TABLE_DELIMITER.match(lines[i]) and "|" in lines[i - 1]:
            rows = [lines[i - 1]]
            j = i + 1
            while j < len(lines) and lines[j].strip() and "|" in lines[j]:
                rows.append(lines[j])
                j += 1
            shapes.append(tuple(_cell_count(row) for row in rows))
            i = j
        else:
            i += 1
    return shapes


def _cell_count(row: str) -> int:
    cells = re.split(r"(?<!\\)\|", row.strip())
    if cells and cells[0] == "":
        cells = cells[1:]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    return len(cells)


def structure(masked: str) -> Structure:
    """Describe the structure of a masked Markdown text."""
    lines = masked.splitlines()
    block_lines: dict[str, tuple[str, bool]] = {}
    for line in (line for line in lines if "@@BLOCK_" in line):
        for name in PLACEHOLDER_RE.findall(line):
            if name.startswith("@@BLOCK_"):
                indent = line[: len(line) - len(line.lstrip())]
                block_lines[name] = (indent, line.strip() == name)
    targets: Counter[str] = Counter()
    targets.update(f"link or image target {m['url']!r}" for m in _LINK_TARGET.finditer(masked))
    targets.update(f"reference label [{m['label']}]" for m in _REF_LABEL.finditer(masked))
    targets.update(f"reference label [{m['label']}]" for m in _COLLAPSED_REF.finditer(masked))
    targets.update(f"footnote [^{m['name']}]" for m in _FOOTNOTE.finditer(masked))
    targets.update(
        f"reference definition [{m['label']}]: {m['url']}" for m in _REF_DEFINITION.finditer(masked)
    )
    targets.update(f"autolink <{m['url']}>" for m in _AUTOLINK.finditer(masked))
    targets.update(f"icon :{m['icon']}:" for m in _ICON.finditer(masked))
    targets.update(
        f"HTML link {m['dq'] if m['dq'] is not None else m['sq']!r}"
        for m in _HTML_URL.finditer(masked)
    )
    headings = find_headings(masked)
    return Structure(
        placeholders=Counter(PLACEHOLDER_RE.findall(masked)),
        block_lines=block_lines,
        heading_levels=[h.level for h in headings],
        heading_texts=[h.text for h in headings],
        targets=targets,
        markers=_ordered_markers(masked),
        tables=_table_shapes(lines),
        list_items=[
            (m["indent"], "ordered" if m["bullet"][0].isdigit() else "bullet")
            for m in _LIST_ITEM.finditer(masked)
        ],
        html_tags=Counter(m["tag"].lower() for m in _HTML_TAG.finditer(masked)),
    )


@functools.lru_cache(maxsize=1024)
def _structure(masked: str) -> Structure:
    """`structure`, remembered for `check_section` (which only reads it): the English of a
    section is checked once per language."""
    return structure(masked)


def _ordered_markers(masked: str) -> list[tuple[str, str, str]]:
    found: list[tuple[int, tuple[str, str, str]]] = [
        (m.start(), (m["indent"], m["marker"], " ".join(m["kind"].split())))
        for m in _ADMONITION.finditer(masked)
    ]
    found += [(m.start(), (m["indent"], m["marker"], "tab")) for m in _TAB.finditer(masked)]
    return [marker for _, marker in sorted(found)]


def _describe_marker(marker: tuple[str, str, str]) -> str:
    indent, symbol, kind = marker
    name = f'{symbol} "..."' if kind == "tab" else f"{symbol} {kind}".strip()
    return f"`{name}` indented {len(indent.expandtabs(4))}"


def check_section(english: str, draft: str) -> list[str]:
    """Compare a masked draft section with its masked English section.

    Args:
        english: The masked English section.
        draft: The masked translated section.

    Returns:
        One finding per problem, worded for the model to fix; empty when the draft is sound.

    Example:
        >>> check_section("See [docs](a.md).\\n", "[文書](b.md) を参照。\\n")[0]
        "link or image target 'a.md' appears 1 time(s) in the English but 0 in the translation"
    """
    src, out = _structure(english), _structure(draft)
    findings: list[str] = []
    for name in sorted(set(src.placeholders) | set(out.placeholders)):
        want, got = src.placeholders[name], out.placeholders[name]
        if want == 0:
            findings.append(f"placeholder {name} is not in the English: remove it")
        elif got != want:
            findings.append(f"placeholder {name} must appear exactly once, found {got} time(s)")
    for name, (indent, _alone) in src.block_lines.items():
        if name in out.block_lines and out.placeholders[name] == 1:
            out_indent, out_alone = out.block_lines[name]
            if not out_alone:
                findings.append(f"placeholder {name} must stay alone on its own line")
            elif out_indent != indent:
                findings.append(
                    f"placeholder {name} must be indented by {len(indent)} spaces, "
                    f"found {len(out_indent)}"
                )
    if src.heading_levels != out.heading_levels:
        findings.append(
            "headings differ: the English has "
            + _headings(src.heading_levels, src.heading_texts)
            + "; the translation has "
            + _headings(out.heading_levels, out.heading_texts)
        )
    for target in sorted(set(src.targets) | set(out.targets)):
        if src.targets[target] != out.targets[target]:
            findings.append(
                f"{target} appears {src.targets[target]} time(s) in the English but "
                f"{out.targets[target]} in the translation"
            )
    if src.markers != out.markers:
        findings.append(
            "admonition, details and tab markers differ: the English has "
            + (", ".join(map(_describe_marker, src.markers)) or "none")
            + "; the translation has "
            + (", ".join(map(_describe_marker, out.markers)) or "none")
        )
    if src.tables != out.tables:
        findings.append(
            f"tables differ: the English has {_tables(src.tables)}; "
            f"the translation has {_tables(out.tables)}"
        )
    if src.list_items != out.list_items:
        findings.append(
            f"list items differ: the English has {len(src.list_items)} "
            f"({_list_items(src.list_items)}); the translation has {len(out.list_items)} "
            f"({_list_items(out.list_items)})"
        )
    src_labels, out_labels = _mermaid_label_lists(english), _mermaid_label_lists(draft)
    if src_labels != out_labels:
        findings.append(
            "Mermaid label lists differ: the English has "
            + (", ".join(f"block {n}: {c} label(s)" for n, c in src_labels) or "none")
            + "; the translation has "
            + (", ".join(f"block {n}: {c} label(s)" for n, c in out_labels) or "none")
            + " (translate each numbered label, keep the numbers and the comment lines)"
        )
    if src.html_tags != out.html_tags:
        findings.append(
            f"HTML tags differ: the English has {_tags(src.html_tags)}; "
            f"the translation has {_tags(out.html_tags)}"
        )
    return findings


def _mermaid_label_lists(masked: str) -> list[tuple[str, int]]:
    return [
        (m["n"], len(re.findall(r"(?m)^[ \t]*\d+: ", m["labels"])))
        for m in MERMAID_LABELS_RE.finditer(masked)
    ]


def _headings(levels: list[int], texts: list[str]) -> str:
    if not levels:
        return "no headings"
    return ", ".join(f"{'#' * level} {text}" for level, text in zip(levels, texts, strict=True))


def _tables(tables: list[tuple[int, ...]]) -> str:
    if not tables:
        return "no tables"
    return ", ".join(
        f"a table of {len(rows)} rows and {rows[0]} columns"
        + ("" if len(set(rows)) == 1 else f" (cells per row {list(rows)})")
        for rows in tables
    )


def _list_items(items: list[tuple[str, str]]) -> str:
    return ", ".join(f"{kind}@{len(indent)}" for indent, kind in items) or "none"


def _tags(tags: Counter[str]) -> str:
    return ", ".join(f"<{tag}> x{count}" for tag, count in sorted(tags.items())) or "none"


def align_code(english: Masked, translated: Masked) -> tuple[str, dict[str, str], list[str]]:
    """Rename a masked translation's placeholders to the English ones holding the same code.

    Code is compared line by line with surrounding spaces ignored (a translation may indent a
    block differently). Code that is not in the English keeps a placeholder of its own, named
    `@@X...@@` so that no check mistakes it for an English one.

    Returns:
        The renamed text, the code of the placeholders left unmatched, and one finding for each.
    """
    findings: list[str] = []

    def _key(code: str) -> str:
        first = code.lstrip().split("\n", 1)[0].lstrip("`~").strip()
        if first.startswith("mermaid"):
            code = mermaid_skeleton(code)  # translated labels are expected
        return "\n".join(line.strip() for line in code.splitlines())

    free: dict[str, list[str]] = {}
    for name, code in english.code.items():
        free.setdefault(_key(code), []).append(name)
    renames: dict[str, str] = {}
    leftovers: dict[str, str] = {}
    for name, code in translated.code.items():
        candidates = free.get(_key(code))
        if candidates:
            renames[name] = candidates.pop(0)
            continue
        kind = "code block" if name.startswith("@@BLOCK_") else "inline code"
        first = code.strip().splitlines()[0] if code.strip() else code
        findings.append(f"{kind} {first[:60]!r} is not in the English (code is never translated)")
        renames[name] = name.replace("@@", "@@X", 1)
        leftovers[renames[name]] = code
    text = PLACEHOLDER_RE.sub(lambda m: renames.get(m.group(0), m.group(0)), translated.text)

    def _relabel(match: re.Match[str]) -> str:
        renamed = renames.get(f"@@BLOCK_{match[1]}@@", "")
        number = re.fullmatch(r"@@X?BLOCK_(\d+)@@", renamed)
        return f"<!-- i18n:mermaid {number[1] if number else match[1]}"

    text = re.sub(r"<!-- i18n:mermaid (\d+)", _relabel, text)
    return text, leftovers, findings


@dataclass
class AlignedPage:
    """An English page and its translation, masked, code aligned, split into sections.

    Attributes:
        english: The masked English sections.
        translated: The masked translated sections (placeholders renamed to the English ones).
        findings: What aligning found (front matter keys, code not in the English).
    """

    english: list[str]
    translated: list[str]
    findings: list[str]
    english_masked: Masked
    _offset: int
    _starts: list[int]
    _lines: list[str]
    _code: dict[str, str]

    def at(self, number: int, line: int | None) -> str:
        """`line N` of the translated file for `line` (0-based) of translated section `number`
        (its first non-blank line when `line` is `None`)."""
        if line is None:
            section = self.translated[number] if number < len(self.translated) else ""
            line = len(section) - len(section.lstrip("\n")) if section.strip() else 0
            line = section.count("\n", 0, line)
        prefix = "".join(f"{text}\n" for text in self._lines[: self._starts[number] + line])
        return f"line {self._offset + unmask(prefix, self._code).count(chr(10))}"


def align_page(english: str, translated: str) -> AlignedPage | list[str]:
    """Mask both pages, align the translation's code with the English, split both into
    sections; or the findings that stop the comparison (bad front matter or code fences)."""
    findings: list[str] = []
    try:
        en_fm, tr_fm = split_front_matter(english), split_front_matter(translated)
    except ValueError as exc:
        return [str(exc)]
    missing = [key for key in en_fm.data if key not in tr_fm.data]
    if missing:
        findings.append(f"front matter keys missing: {', '.join(map(str, missing))}")
    try:
        en_masked = mask(en_fm.body)
        tr_masked = mask(tr_fm.body, start=len(en_masked.code) + 1)
    except ValueError as exc:
        return [*findings, str(exc)]
    tr_text, _, code_findings = align_code(en_masked, tr_masked)
    findings += code_findings
    en_sections, tr_sections = split_sections(en_masked.text), split_sections(tr_text)
    starts = [0]
    for section in tr_sections:
        starts.append(starts[-1] + section.count("\n"))
    head = len(translated) - len(tr_fm.body)
    return AlignedPage(
        english=en_sections,
        translated=tr_sections,
        findings=findings,
        english_masked=en_masked,
        _offset=translated.count("\n", 0, head) + 1,
        _starts=starts,
        _lines=tr_masked.text.split("\n"),
        _code=tr_masked.code,
    )


def verify_page(
    english: str,
    translated: str,
    lang: str | None = None,
    glossary: Glossary | None = None,
    *,
    resplit: Collection[int] = (),
) -> list[str]:
    """Check a whole translated page against its English page.

    Checks everything `check_section` checks, section by section, plus: the code is the English
    code, the headings carry the English ids (`{#id}`), the English front matter keys are kept,
    no two sections' contents are swapped. With `lang` and `glossary`, also what
    `meaning_findings` checks, and one form per page (`page_form_findings`). Every finding
    starts with the line of the translated file it is about (`line 12: ...`).

    Args:
        english: The English page, front matter included.
        translated: The translated page, front matter included.
        lang: The translation's language code (for the meaning checks).
        glossary: The glossary (for the meaning checks).
        resplit: Sections whose paragraph split a maintainer vouched for (`--adopt
            --section`): a different number of paragraphs is accepted there when it is the
            only difference in their blocks (`paragraph_split_only`).

    Returns:
        Findings; empty when the translation is sound.
    """
    aligned = align_page(english, translated)
    if isinstance(aligned, list):
        return aligned
    findings = list(aligned.findings)
    en_sections, tr_sections, _at = aligned.english, aligned.translated, aligned.at
    en_masked = aligned.english_masked
    tr_text = "".join(tr_sections)
    if len(en_sections) != len(tr_sections):
        findings.append(
            f"the English has {len(en_sections) - 1} `## ` sections, the translation "
            f"{len(tr_sections) - 1}"
        )
    else:
        for number, (en, tr) in enumerate(zip(en_sections, tr_sections, strict=True)):
            findings += [
                f"{_at(number, None)}: section {number}: {f}" for f in check_section(en, tr)
            ]
            if lang is not None and glossary is not None:
                findings += [
                    f"{_at(number, f.line)}: section {number}: {f.message}"
                    for f in meaning_findings(en, tr, lang, glossary, resplit=number in resplit)
                ]
        if lang is not None and glossary is not None:
            rules = glossary.rules.get(lang) or LanguageRules()
            for group, places in page_form_findings(tr_sections, rules):
                shown = "; ".join(
                    f"{name!r} at " + _lines([_at(n, line) for n, line in where])
                    for name, where in places.items()
                )
                first = min(where[0] for where in places.values())
                findings.append(
                    f"{_at(*first)}: {group} written in {len(places)} forms on one page "
                    f"({shown}): use one form"
                )
        for i, j in swapped_sections(list(zip(en_sections, tr_sections, strict=True)), glossary):
            findings.append(
                f"{_at(i, None)}: section {i}: its translation and that of section {j} look "
                "swapped, each matches the other's English (numbers, code, links, names)"
            )
    ids = english_heading_ids(en_masked.text, en_masked.code)
    pinned = [h.explicit_id for h in find_headings(tr_text)]
    if len(pinned) == len(ids):
        for english_id, got in zip(ids, pinned, strict=True):
            if english_id != got:
                findings.append(
                    f"heading id {got!r} should be the English id {english_id!r} "
                    f"(write `{{#{english_id}}}` after the heading)"
                    if got
                    else f"a heading lacks the English id: add `{{#{english_id}}}`"
                )
    return findings


def _lines(where: list[str]) -> str:
    unique = list(dict.fromkeys(where))
    more = f" and {len(unique) - 5} more" if len(unique) > 5 else ""
    return ", ".join(unique[:5]) + more


# -- meaning-bearing tokens: numbers, paragraphs, untranslated text, glossary -------------------

LATIN_RUN_WORDS = 8
"""A run of this many Latin-script words in a translation's prose counts as untranslated."""

# Each pattern with the literals one of which any match of it contains: a text with none of
# them is not searched (most blocks have no link, tag, icon or marker).
_NOT_PROSE: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"^[ \t]{0,3}\[[^\]]+\]:.*$", re.M), ("]:",)),  # reference definitions
    (re.compile(r"\]\([^)]*\)"), ("](",)),  # link and image targets
    (re.compile(r"\]\[[^\]]*\]"), ("][",)),  # reference labels
    (re.compile(r"\[[^\]]*\]\[\]"), ("][]",)),  # collapsed references show their label
    (re.compile(r"\[\^[^\]]+\]"), ("[^",)),  # footnotes
    (re.compile(r"<[^>\n]*>"), ("<",)),  # HTML tags and autolinks
    (re.compile(r"https?://\S+"), ("://",)),
    (re.compile(r"\{[:#.][^}\n]*\}"), ("{:", "{#", "{.")),  # attribute lists
    (_ICON, (":material-", ":octicons-", ":fontawesome-", ":simple-")),
    (PLACEHOLDER_RE, ("@@",)),
    (re.compile(r"@@X(?:BLOCK|CODE)_\d+@@"), ("@@X",)),
    (  # marker and type
        re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]*[\w-]*", re.M),
        ("!!!", "???", "==="),
    ),
    (re.compile(r"^[ \t]*(?:<!-- i18n:mermaid \d+|-->|\d+:)(?=[ \t]|$)", re.M), (":", "-->")),
    (re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])(?=[ \t])", re.M), ("",)),  # list bullets, numbers
    (re.compile(r"^ {0,3}#{1,6}(?=[ \t])", re.M), ("#",)),
]
_NUMBER = re.compile(r"(?<![\w@])\d+(?:[.,]\d+)*")
_LATIN_WORD = r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*"
_LATIN_RUN = re.compile(
    rf"(?<![A-Za-z]){_LATIN_WORD}(?:[ \t\n,;:()/\"“”'.!?-]+{_LATIN_WORD}){{{LATIN_RUN_WORDS - 1},}}"
)
"""A run starts at a word's first letter: one from a later letter of the word would be the
same run less a few letters, found from the first letter already (the lookbehind only spares
the engine those tries)."""


@functools.lru_cache(maxsize=4096)  # the checks take the prose of one text many times
def prose(masked: str) -> str:
    """Return the prose of a masked text: code, link targets, URLs, tags and markup removed."""
    for pattern, needs in _NOT_PROSE:
        for literal in needs:
            if literal in masked:
                # a mark no Latin run crosses; the lines stay where they were
                masked = pattern.sub(_not_prose_mark, masked)
                break
    return masked


def _not_prose_mark(match: re.Match[str]) -> str:
    return " \u2022 " + "\n" * match.group(0).count("\n")


def numbers(masked: str) -> Counter[str]:
    """Count the numbers of a masked text's prose (thousands separators ignored)."""
    found = Counter[str]()
    for match in _NUMBER.finditer(prose(masked)):
        value = match.group(0)
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", value):
            value = value.replace(",", "")
        found[value.rstrip(".,")] += 1
    return found


def paragraph_count(masked: str) -> int:
    """Count the blocks of a masked text: runs of non-blank lines between blank lines."""
    return len([block for block in re.split(r"\n[ \t]*\n", masked) if block.strip()])


_NOT_PARAGRAPH = re.compile(
    r"(?:#{1,6}[ \t]|[-*+][ \t]|\d+[.)][ \t]|\||>|!!!|\?\?\?|===|@@X?BLOCK_|<|\[\^|"
    r"\[[^\]]+\]:|(?:[-*_][ \t]*){3,}$)"
)


def _block_kinds(masked: str) -> list[str]:
    """Each block's kind: `p` and its indent for a paragraph of prose, else `other`; a run of
    paragraphs at one indent counts as one."""
    kinds: list[str] = []
    for _, block in _blocks(masked):
        first = block.lstrip("\n").split("\n", 1)[0]
        text = first.lstrip(" \t")
        indent = len(first[: len(first) - len(text)].expandtabs(4))
        kind = "other" if _NOT_PARAGRAPH.match(text) else f"p{indent}"
        if kind == "other" or not kinds or kinds[-1] != kind:
            kinds.append(kind)
    return kinds


def paragraph_split_only(english: str, draft: str) -> bool:
    """Whether a masked draft section differs from its masked English section in its paragraph
    split only: it has another number of blocks, but the same blocks once each run of prose
    paragraphs (at one indent) counts as one: headings, lists, tables, code, admonitions and
    the like stand where the English has them."""
    return paragraph_count(english) != paragraph_count(draft) and _block_kinds(
        english
    ) == _block_kinds(draft)


def untranslated_runs(masked: str, keep: list[str]) -> list[str]:
    """Return the runs of `LATIN_RUN_WORDS` or more Latin-script words in a translation's prose.

    Words of `keep` (the do-not-translate list) do not count as Latin words.
    """
    text = prose(masked)
    for word in sorted(keep, key=len, reverse=True):
        if all(piece in text for piece in word.split()):
            text = name_pattern(word).sub(" \u2022 ", text)
    return [" ".join(m.group(0).split()) for m in _LATIN_RUN.finditer(text)]


# -- the meaning and consistency checks: one function for drafts, --check and --adopt -----------

# A number, with its sign; not the digits of a name such as UTF-8 or base-64, whose place in a
# sentence moves with the name (ko "UTF-8로 최대 48바이트" for "at most 48 UTF-8 bytes").
_SIGNED_NUMBER = re.compile(
    r"(?:(?<![\w@.\-−])[-−](?=\d))?(?<![\w@])(?<![A-Za-z][-‐])\d+(?:[.,]\d+)*"
)
_DIGIT = re.compile(r"\d")
_FOOTNOTE_DEFINITION = re.compile(r"^[ \t]{0,3}\[\^(?P<name>[^\]]+)\]:(?P<text>[^\n]*)$", re.M)
_MARKER_LINE = re.compile(r"^(?P<indent>[ \t]*)(?:!!!|\?\?\?\+?|===\+?)[ \t]")
_TABLE_ROW = re.compile(r"^[ \t]*\|")


def _number_list(masked: str, bare: tuple[Units, str] | None = None) -> list[str]:
    """The numbers of a masked text's prose, in order; with `bare` (units and language), only
    those that carry no unit."""
    found = _numbers_at(masked)
    if not found or bare is None:
        return [value for _, value in found]
    skip = bare[0].starts(prose(masked), bare[1])
    return [value for start, value in found if start not in skip]


@functools.lru_cache(maxsize=4096)
def _numbers_at(masked: str) -> tuple[tuple[int, str], ...]:
    """The numbers of a masked text's prose, each with where it starts in the prose."""
    text = prose(masked)
    if _DIGIT.search(text) is None:
        return ()
    found: list[tuple[int, str]] = []
    for match in _SIGNED_NUMBER.finditer(text):
        value = match.group(0).replace("−", "-")
        if _THOUSANDS.fullmatch(value):
            value = value.replace(",", "")
        found.append((match.start(), value.rstrip(".,")))
    return tuple(found)


_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _blocks(masked: str) -> list[tuple[int, str]]:
    """The blocks of a masked text (runs of non-blank lines) with their first line's number."""
    return list(_block_tuple(masked))


@functools.lru_cache(maxsize=1024)
def _block_tuple(masked: str) -> tuple[tuple[int, str], ...]:
    out: list[tuple[int, str]] = []
    line = 0
    for part in _BLANK_LINE_SPLIT.split(masked):
        if part.strip() and not _BLANK_LINE.fullmatch(part):
            lead = len(part) - len(part.lstrip("\n"))
            out.append((line + part.count("\n", 0, lead), part))
        line += part.count("\n")
    return tuple(out)


_BLANK_LINE_SPLIT = re.compile(r"(\n[ \t]*\n)")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


_LENGTH_UNIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’._-]*|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7a3]")


@functools.lru_cache(maxsize=4096)  # the English of a paragraph is measured once per language
def _length(text: str) -> int:
    """The length of prose: one per Latin word or number, one per CJK character or Hangul
    syllable (so a Latin word and a CJK character weigh the same in every language)."""
    return len(_LENGTH_UNIT.findall(text))


@functools.cache
def _word_pattern(word: str) -> re.Pattern[str]:
    pattern = phrase_pattern(word)
    if re.fullmatch(r"[A-Za-z][\w .-]*", word):
        pattern = r"(?<![A-Za-z0-9_-])" + pattern + r"(?![A-Za-z0-9_-])"
    return re.compile(pattern)


def _may_occur(text: str, word: str) -> bool:
    """False when `word` cannot occur in `text` (`_find_all`).

    Each piece of a match is in the text as it is, so a missing piece needs no search.
    """
    return all(piece in text for piece in word.split())


def _find_all(text: str, word: str) -> list[int]:
    """Where `word` occurs in `text`: whole words for Latin words (case kept), anywhere else."""
    if not _may_occur(text, word):
        return []
    pieces = word.split()
    pattern = _word_pattern(word)
    if not pieces:
        return [m.start() for m in pattern.finditer(text)]
    # A match starts with the first piece: try the pattern only there, one match after the
    # other as `finditer` finds them.
    found: list[int] = []
    start = text.find(pieces[0])
    while start >= 0:
        match = pattern.match(text, start)
        if match is not None:
            found.append(start)
        start = text.find(pieces[0], match.end() if match is not None else start + 1)
    return found


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index)


def _excerpt(text: str, index: int, end: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    start = max(start, index - 24)
    stop = text.find("\n", end)
    stop = len(text) if stop < 0 else min(stop, end + 12)
    return " ".join(text[start:stop].replace("\u2022", " ").split())


def _table_rows(masked: str) -> list[tuple[int, list[str]]]:
    """The body rows of every table: (line, cells); header and delimiter rows left out."""
    lines = masked.split("\n")
    rows: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines):
        if not _TABLE_ROW.match(line) or _TABLE_DELIMITER.match(line):
            continue
        if i + 1 < len(lines) and _TABLE_DELIMITER.match(lines[i + 1]):
            rows.append((i, []))  # a header row starts a new table
            continue
        cells = re.split(r"(?<!\\)\|", line.strip())[1:]
        if cells and cells[-1].strip() == "":
            cells = cells[:-1]
        rows.append((i, [c.strip() for c in cells]))
    return rows


def _table_bodies(masked: str) -> list[list[tuple[int, list[str]]]]:
    tables: list[list[tuple[int, list[str]]]] = []
    for line, cells in _table_rows(masked):
        if not cells:
            tables.append([])
        elif tables:
            tables[-1].append((line, cells))
    return tables


def _cell_end(cell: str) -> str:
    text = prose(cell).replace("\u2022", " ").strip()
    text = re.sub(r"[ \t]*[（(][^（）()]*[）)]$", "", text)
    return text.rstrip(" *_`)）」』]")


def _prose_lines(masked: str) -> list[tuple[int, str]]:
    """The prose lines of a masked text with their numbers: no tables, headings, labels."""
    text = MERMAID_LABELS_RE.sub(lambda m: "\n" * m.group(0).count("\n"), masked)
    raw = text.split("\n")
    out = []
    for i, line in enumerate(prose(text).split("\n")):
        if _TABLE_ROW.match(raw[i]) or re.match(r"^ {0,3}#{1,6}[ \t]", raw[i]):
            continue
        out.append((i, line))
    return out


def _admonition_bodies(masked: str) -> list[bool]:
    """For each admonition, details or tab marker in order: whether it has a body."""
    lines = masked.split("\n")
    found = []
    for i, line in enumerate(lines):
        m = _MARKER_LINE.match(line)
        if not m:
            continue
        indent = len(m["indent"].expandtabs(4))
        body = False
        for nxt in lines[i + 1 :]:
            if not nxt.strip():
                continue
            inside = len(nxt) - len(nxt.lstrip()) > indent
            text = prose(nxt).replace("\u2022", "").strip()
            body = inside and bool(text or PLACEHOLDER_RE.search(nxt))
            break
        found.append(body)
    return found


def _footnote_texts(masked: str) -> dict[str, bool]:
    lines = masked.split("\n")
    out: dict[str, bool] = {}
    for m in _FOOTNOTE_DEFINITION.finditer(masked):
        text = m["text"].strip()
        if not text:
            after = lines[_line(masked, m.start()) + 1 :]
            text = after[0].strip() if after and after[0].startswith((" ", "\t")) else ""
        out[m["name"]] = bool(text)
    return out


def _hidden(text: str, words: list[str]) -> str:
    """`text` with every occurrence of `words` replaced by filler of the same length."""
    for word in sorted(words, key=len, reverse=True):
        text = text.replace(word, "\u3000" * len(word))
    return text


def check_meaning(english: str, draft: str, lang: str, glossary: Glossary) -> list[str]:
    """Check the meaning-bearing tokens and the consistency of a masked draft section.

    Without a model (see `meaning_findings` for the list).

    Args:
        english: The masked English section.
        draft: The masked translated section.
        lang: The target language code.
        glossary: The glossary, with the language's rules (`PromptSet.load`).

    Returns:
        One finding per problem, worded for the model to fix; empty when the draft is sound.

    Example:
        >>> g = Glossary(do_not_translate=[], terms={})
        >>> check_meaning("Wait 30 seconds.\\n", "60 秒待ちます。\\n", "ja", g)[0]
        'the number 30 appears 1 time(s) in the English but 0 in the translation'
    """
    return [f.message for f in meaning_findings(english, draft, lang, glossary)]


def meaning_findings(
    english: str, draft: str, lang: str, glossary: Glossary, *, resplit: bool = False
) -> list[Located]:
    """What `check_meaning` finds, each with the line (within the section) it is on.

    Checked: numbers (missing, added, reordered within a paragraph, signs), the unit after a
    number, paragraphs, empty admonition and footnote bodies, untranslated runs,
    do-not-translate words kept, text in a script the language never uses, every glossary term
    whose English the section uses (its rendering is there, no known variant of it is), the
    language's prose register, one register per table, the order of code in table cells and
    list items, and each paragraph's length against its English.

    With `resplit` (a paragraph split a maintainer vouched for), a different number of
    paragraphs is no finding when it is the only difference in the blocks
    (`paragraph_split_only`); the paragraph checks then compare the section as one paragraph.
    """
    findings: list[Located] = []
    english_prose, draft_prose = prose(english), prose(draft)
    rules = glossary.rules.get(lang) or LanguageRules()
    en_numbers, tr_numbers = _number_list(english), _number_list(draft)
    want, got = Counter(en_numbers), Counter(tr_numbers)
    for number in sorted(want):
        if got[number] < want[number]:
            findings.append(
                Located(
                    f"the number {number} appears {want[number]} time(s) in the English but "
                    f"{got[number]} in the translation"
                )
            )
    allowed = {
        number
        for word, values in rules.number_words.items()
        if _says_word(english_prose, word)
        for number in values
    }
    for number in sorted(got):
        small = re.fullmatch(r"\d+", number) is not None and int(number) <= rules.counting
        if want[number] == 0 and not small and number not in allowed:
            findings.append(
                Located(
                    f"the number {number} appears {got[number]} time(s) in the translation but "
                    f"{want[number]} in the English: say only what the English says",
                    _line(draft_prose, draft_prose.find(number)),
                )
            )
    en_blocks, tr_blocks = _blocks(english), _blocks(draft)
    if resplit and paragraph_split_only(english, draft):
        findings += _block_findings([(0, english)], [(0, draft)], rules, glossary.units, lang)
    elif len(en_blocks) != len(tr_blocks):
        findings.append(
            Located(
                f"the English has {len(en_blocks)} paragraph(s) or block(s) separated by blank "
                f"lines, the translation {len(tr_blocks)}: translate every paragraph, keep the "
                "blank lines"
            )
        )
    else:
        findings += _block_findings(en_blocks, tr_blocks, rules, glossary.units, lang)
    for en_ok, tr_ok in zip(_admonition_bodies(english), _admonition_bodies(draft), strict=False):
        if en_ok and not tr_ok:
            findings.append(Located("an admonition, details or tab has lost its body"))
    tr_notes = _footnote_texts(draft)
    for name, has_text in _footnote_texts(english).items():
        if has_text and not tr_notes.get(name, False):
            findings.append(Located(f"footnote [^{name}] has no text: translate it"))
    for run in untranslated_runs(draft, glossary.do_not_translate):
        shown = run if len(run) <= 80 else run[:77] + "..."
        findings.append(Located(f"untranslated English text: {shown!r}"))
    en_units, tr_units = (
        glossary.units.pairs(english_prose, "en"),
        glossary.units.pairs(draft_prose, lang),
    )
    for (number, unit), count in sorted(en_units.items()):
        if tr_units.get((number, unit), 0) < count:
            findings.append(
                Located(f"{number} {unit} in the English is not {number} {unit} in the translation")
            )
    for word, need in _names_needed(english_prose, tuple(glossary.do_not_translate)):
        have = len(_find_all(draft_prose, word))
        if have < need:
            findings.append(
                Located(
                    f"{word!r} appears {need} time(s) in the English but {have} in the "
                    "translation: do-not-translate names stay as written"
                )
            )
    if rules.foreign_script is not None:
        for m in rules.foreign_script.pattern.finditer(draft_prose):
            if m.group(0) in english_prose:
                continue  # the English quotes it too (a page about the languages)
            shown = _excerpt(draft_prose, m.start(), m.end())
            findings.append(
                Located(f"{rules.foreign_script.message}: {shown!r}", _line(draft_prose, m.start()))
            )
            break
    findings += _link_text_findings(english, draft, lang, glossary)
    findings += _term_findings(english_prose, draft_prose, lang, glossary)
    findings += _register_findings(draft, rules)
    return findings


@functools.lru_cache(maxsize=1024)  # the English of a section is checked once per language
def _says_word(english_prose: str, word: str) -> bool:
    """Whether English prose says the number word `word` (`number_words`)."""
    return re.search(rf"\b{phrase_pattern(word)}", english_prose, re.I) is not None


@functools.lru_cache(maxsize=1024)  # the English of a section is checked once per language
def _names_needed(english_prose: str, names: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """Each do-not-translate name and how often a translation of `english_prose` must keep it:
    as often as the English says it, less the times a capitalized word (`Session`) starts a
    sentence, where it is a noun to translate."""
    out = []
    for word in names:
        need = len(_find_all(english_prose, word))
        if need and re.fullmatch(r"[A-Z][a-z]+", word):
            need -= len(re.findall(rf"(?:^|[|.:!?]\s|\u2022\s)\s*{word}\b", english_prose, re.M))
        out.append((word, need))
    return tuple(out)


_LINK = re.compile(
    r"(?<!!)\[(?P<text>[^\[\]\n]*)\](?:\((?P<url>[^)\s]*)[^)\n]*\)|\[(?P<label>[^\]\n]*)\])"
)


@functools.lru_cache(maxsize=1024)  # the English of a section is checked once per language
def _link_text_needs(
    en_text: str, names: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The placeholders and the do-not-translate `names` of an English link's text, which the
    translated link's text must keep."""
    return tuple(PLACEHOLDER_RE.findall(en_text)), tuple(w for w in names if _find_all(en_text, w))


def _links(masked: str) -> dict[str, list[tuple[int, str]]]:
    """Link target -> the (line, text) of each link to it, in order."""
    out: dict[str, list[tuple[int, str]]] = {}
    for m in _LINK.finditer(masked):
        target = m["url"] if m["url"] is not None else (m["label"] or m["text"])
        out.setdefault(target, []).append((_line(masked, m.start()), m["text"]))
    return out


def _link_text_findings(english: str, draft: str, lang: str, glossary: Glossary) -> list[Located]:
    """Each link's text says what the English link's text says: its code, its names and its
    glossary terms (so two link texts swapped between their targets are seen)."""
    findings: list[Located] = []
    tr_links = _links(draft)
    for target, links in _links(english).items():
        for (_, en_text), (line, tr_text) in zip(links, tr_links.get(target, []), strict=False):
            code, names = _link_text_needs(en_text, tuple(glossary.do_not_translate))
            missing = [p for p in code if p not in tr_text]
            missing += [w for w in names if not _find_all(tr_text, w)]
            used = glossary.terms_used(en_text)
            missing += [
                glossary.terms[lang][term]
                for term in glossary.terms.get(lang, {})
                if term in used
                and not any(_find_all(tr_text, f) for f in glossary.renderings(lang, term))
            ]
            if missing:
                findings.append(
                    Located(
                        f"the text of the link to {target!r} does not say what the English link "
                        f"says ({', '.join(missing)} missing): is it another link's text?",
                        line,
                    )
                )
    return findings


@functools.lru_cache(maxsize=2048)
def _repeated_sentences(block: str, shortest: int = 6) -> frozenset[str]:
    """The sentences (of `shortest` words or characters or more) that a block says more than
    once."""
    said = Counter(
        " ".join(sentence.replace("\u2022", " ").split())
        for sentence in _SENTENCE_END.split(prose(block))
    )
    return frozenset(
        key for key, times in said.items() if times > 1 and _length(key) >= max(shortest, 1)
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _block_findings(
    en_blocks: list[tuple[int, str]],
    tr_blocks: list[tuple[int, str]],
    rules: LanguageRules,
    units: Units,
    lang: str,
) -> list[Located]:
    findings: list[Located] = []
    for (_, en), (line, tr) in zip(en_blocks, tr_blocks, strict=True):
        a, b = _number_list(en, (units, "en")), _number_list(tr, (units, lang))
        if a != b and sorted(a) == sorted(b):
            findings.append(
                Located(
                    f"a paragraph has its numbers in another order ({', '.join(b)}) than the "
                    f"English ({', '.join(a)})",
                    line,
                )
            )
        if (
            a
            and b
            and sorted(x.lstrip("-") for x in a) == sorted(x.lstrip("-") for x in b)
            and sorted(a) != sorted(b)
        ):
            findings.append(
                Located(
                    f"a paragraph has a sign changed: {', '.join(b)} where the English has "
                    f"{', '.join(a)}",
                    line,
                )
            )
        # A sentence the English says twice is said twice in the translation too, though a
        # short English one ("the CLI's store.") may be long enough there to be counted.
        said_twice = _repeated_sentences(en, shortest=1)
        repeated = _repeated_sentences(tr) - said_twice
        if len(repeated) > len(said_twice) and not _TABLE_ROW.match(en):
            findings.append(
                Located(f"a sentence is said twice in one paragraph: {sorted(repeated)[0]!r}", line)
            )
        if rules.length is None or _TABLE_ROW.match(en) or "<!-- i18n:mermaid" in en:
            continue
        en_len, tr_len = _length(prose(en)), _length(prose(tr))
        if en_len < rules.min_length:
            continue
        ratio = tr_len / en_len
        low, high = rules.length
        if not low <= ratio <= high:
            what = "longer" if ratio > high else "shorter"
            findings.append(
                Located(
                    f"a paragraph is {ratio:.2f} times its English's length (usual {low:.2f} to "
                    f"{high:.2f}): much {what}, so a sentence may have been "
                    + ("added" if ratio > high else "dropped"),
                    line,
                )
            )
    return findings


@dataclass
class TermUse:
    """How a section renders one glossary term its English uses.

    Attributes:
        rendered: How often the rendering (or an accepted form) occurs.
        variants: Each known variant found -> the lines (0-based, in the section) it is on.
    """

    rendered: int
    variants: dict[str, list[int]]


def term_uses(
    english_prose: str, draft_prose: str, lang: str, glossary: Glossary
) -> dict[str, TermUse]:
    """For each glossary term of `lang` that the English prose uses, how the draft renders it.

    A variant that is the rendering of another term the English also uses is not counted
    (one word may stand for that term), nor one that is part of an accepted form (`历史` in
    `历史记录`).
    """
    terms = glossary.terms.get(lang, {})
    used_here = glossary.terms_used(english_prose)
    used = [term for term in terms if term in used_here]
    forms = {term: glossary.renderings(lang, term) for term in used}
    out: dict[str, TermUse] = {}
    for term in used:
        rendered = sum(len(_find_all(draft_prose, f)) for f in forms[term])
        variants: dict[str, list[int]] = {}
        for wrong in glossary.forbid.get(lang, {}).get(term, []):
            if not _may_occur(draft_prose, wrong):
                continue  # hiding the accepted forms below makes no piece of a match
            if any(other != term and wrong in forms[other] for other in used):
                continue  # the word is another term's rendering, and that term is used here
            covers = [
                form for other in used for form in forms[other] if wrong in form and wrong != form
            ]
            text = _hidden(draft_prose, covers)
            lines = sorted({_line(text, i) for i in _find_all(text, wrong)})
            if lines:
                variants[wrong] = lines
        out[term] = TermUse(rendered, variants)
    for term, listed in glossary.forbid.get(lang, {}).items():
        if term not in terms and term in used_here:
            found = {
                w: sorted({_line(draft_prose, i) for i in _find_all(draft_prose, w)})
                for w in listed
            }
            out[term] = TermUse(0, {w: lines for w, lines in found.items() if lines})
    return out


def unrendered_blocks(
    english: str, draft: str, lang: str, glossary: Glossary
) -> dict[str, list[int]]:
    """The paragraphs whose English uses a term that the rest of the section renders, but whose
    translation has none of its renderings: maybe a second, unlisted rendering.

    Not a finding (`--check --terms` lists them for a maintainer to read): a paragraph may
    rightly say a term another way (`the loop runs`, a verb's natural paraphrase) or not at
    all (the term inside a file name or a diagram's code). Compared paragraph by paragraph when
    the English and the translation have as many, else not at all.

    Args:
        english: The masked English section.
        draft: The masked translated section.
        lang: The target language code.
        glossary: The glossary.

    Returns:
        Term -> the lines (0-based, in the section) of the paragraphs that do not render it.
    """
    en_blocks, tr_blocks = _blocks(english), _blocks(draft)
    if len(en_blocks) != len(tr_blocks):
        return {}
    section = term_uses(prose(english), prose(draft), lang, glossary)
    out: dict[str, list[int]] = {}
    terms = glossary.terms.get(lang, {})
    for (_, en), (line, tr) in zip(en_blocks, tr_blocks, strict=True):
        en_prose, tr_prose = prose(en), prose(tr)
        for term in terms:
            use = section.get(term)
            if use is None or not use.rendered:
                continue
            said = en_prose  # `history` inside `conversation history` is that term's
            for longer in terms:
                if term.lower() in longer.lower() and longer != term:
                    said = re.sub(phrase_pattern(longer), " ", said, flags=re.I)
            if not glossary.uses(said, term):
                continue
            if not any(_find_all(tr_prose, form) for form in glossary.renderings(lang, term)):
                out.setdefault(term, []).append(line)
    return out


def _term_findings(
    english_prose: str, draft_prose: str, lang: str, glossary: Glossary
) -> list[Located]:
    findings: list[Located] = []
    terms = glossary.terms.get(lang, {})
    for term, use in term_uses(english_prose, draft_prose, lang, glossary).items():
        right = f": the glossary says {terms[term]!r}" if term in terms else ""
        for wrong, lines in use.variants.items():
            findings += [
                Located(f"{wrong!r} is a forbidden rendering of {term!r}{right}", line)
                for line in lines
            ]
        if term in terms and not use.variants and not use.rendered:
            findings.append(
                Located(
                    f"the English says {term!r}: the glossary's rendering {terms[term]!r} is not "
                    "in the translation (if the English means something else here, add the "
                    "phrase to other_senses in i18n/glossary.yml)"
                )
            )
    return findings


def _register_findings(draft: str, rules: LanguageRules) -> list[Located]:
    findings: list[Located] = []
    for number, text in _prose_lines(draft):
        for rule in rules.prose:
            for m in rule.pattern.finditer(text):
                findings.append(
                    Located(f"{rule.message}: {_excerpt(text, m.start(), m.end())!r}", number)
                )
    if rules.table_registers:
        for table in _table_bodies(draft):
            used: dict[str, tuple[int, str]] = {}
            for line, cells in table:
                for cell in cells:
                    end = _cell_end(cell)
                    for name, pattern in rules.table_registers.items():
                        if end and pattern.search(end):
                            used.setdefault(name, (line, end[-24:]))
                            break
            if len(used) > 1:
                shown = "; ".join(f"{name} ({text!r})" for name, (_, text) in used.items())
                first = min(line for line, _ in used.values())
                findings.append(
                    Located(
                        f"one table mixes registers in its cells: {shown}: use one register",
                        first,
                    )
                )
    return findings


def page_form_findings(
    sections: list[str], rules: LanguageRules
) -> list[tuple[str, dict[str, list[tuple[int, int]]]]]:
    """Forms of one thing used side by side on a page (`x` and `×` for ratios...).

    Returns:
        For each group with more than one form on the page: its name and, per form, the
        (section number, line in the section) of each use.
    """
    out = []
    for group, forms in rules.one_form.items():
        places: dict[str, list[tuple[int, int]]] = {}
        for n, section in enumerate(sections):
            text = prose(section)
            for name, pattern in forms.items():
                for m in pattern.finditer(text):
                    places.setdefault(name, []).append((n, _line(text, m.start())))
        if len(places) > 1:
            out.append((group, places))
    return out


def _signature(masked: str, lang: str | None, glossary: Glossary | None) -> set[str]:
    text = prose(masked)
    keys = {f"n:{n}" for n in _number_list(masked)} | set(PLACEHOLDER_RE.findall(masked))
    keys |= {f"t:{m['url']}" for m in _LINK_TARGET.finditer(masked)}
    if glossary is not None:
        keys |= _names_in(text, tuple(glossary.do_not_translate))
    return keys


@functools.lru_cache(maxsize=1024)
def _names_in(text: str, names: tuple[str, ...]) -> frozenset[str]:
    """The keys (`w:<name>`) of the do-not-translate `names` that occur in prose `text`."""
    return frozenset(f"w:{w}" for w in names if _find_all(text, w))


def swapped_sections(
    pairs: list[tuple[str, str]], glossary: Glossary | None = None
) -> list[tuple[int, int]]:
    """Pairs of sections whose translations look swapped (each matches the other's English).

    Compared: numbers, code, link targets and do-not-translate names.
    """
    en = [_signature(e, None, glossary) for e, _ in pairs]
    tr = [_signature(t, None, glossary) for _, t in pairs]

    def _score(a: set[str], b: set[str]) -> float:
        return len(a & b) / len(a | b) if a | b else 1.0

    found = []
    for i in range(len(pairs)):
        for j in range(i + 1, len(pairs)):
            if not en[i] or not en[j] or en[i] == en[j]:
                continue
            kept = _score(en[i], tr[i]) + _score(en[j], tr[j])
            swapped = _score(en[i], tr[j]) + _score(en[j], tr[i])
            if swapped > kept and _score(en[i], tr[j]) > _score(en[i], tr[i]):
                found.append((i, j))
    return found
