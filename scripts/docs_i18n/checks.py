"""Structure checks of a translation against its English source: code, not trust.

`check_section` compares a masked draft section with the masked English section and returns
concrete findings (empty when the draft is sound). `verify_page` does the same for a whole
translated page on disk (hand-written or machine-made), including the pinned heading ids and the
front matter keys.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .front_matter import split_front_matter
from .headings import english_heading_ids, find_headings
from .markdown_mask import MERMAID_LABELS_RE, PLACEHOLDER_RE, Masked, mask, mermaid_skeleton
from .prompt import Glossary, mentions
from .sections import split_sections

__all__ = [
    "LATIN_RUN_WORDS",
    "Structure",
    "align_code",
    "check_meaning",
    "check_section",
    "numbers",
    "paragraph_count",
    "prose",
    "structure",
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
    for line in lines:
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
    src, out = structure(english), structure(draft)
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


def verify_page(
    english: str, translated: str, lang: str | None = None, glossary: Glossary | None = None
) -> list[str]:
    """Check a whole translated page against its English page.

    Checks everything `check_section` checks, section by section, plus: the code is the English
    code, the headings carry the English ids (`{#id}`), the English front matter keys are kept.
    With `lang` and `glossary`, also what `check_meaning` checks.

    Args:
        english: The English page, front matter included.
        translated: The translated page, front matter included.
        lang: The translation's language code (for the meaning checks).
        glossary: The glossary (for the meaning checks).

    Returns:
        Findings; empty when the translation is sound.
    """
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
    if len(en_sections) != len(tr_sections):
        findings.append(
            f"the English has {len(en_sections) - 1} `## ` sections, the translation "
            f"{len(tr_sections) - 1}"
        )
    else:
        for number, (en, tr) in enumerate(zip(en_sections, tr_sections, strict=True)):
            found = check_section(en, tr)
            if lang is not None and glossary is not None:
                found += check_meaning(en, tr, lang, glossary)
            findings += [f"section {number}: {f}" for f in found]
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


# -- meaning-bearing tokens: numbers, paragraphs, untranslated text, glossary -------------------

LATIN_RUN_WORDS = 8
"""A run of this many Latin-script words in a translation's prose counts as untranslated."""

_NOT_PROSE = [
    re.compile(r"^[ \t]{0,3}\[[^\]]+\]:.*$", re.M),  # reference definitions
    re.compile(r"\]\([^)]*\)"),  # link and image targets
    re.compile(r"\]\[[^\]]*\]"),  # reference labels
    re.compile(r"\[[^\]]*\]\[\]"),  # collapsed references show their label
    re.compile(r"\[\^[^\]]+\]"),  # footnotes
    re.compile(r"<[^>\n]*>"),  # HTML tags and autolinks
    re.compile(r"https?://\S+"),
    re.compile(r"\{[:#.][^}\n]*\}"),  # attribute lists
    _ICON,
    PLACEHOLDER_RE,
    re.compile(r"@@X(?:BLOCK|CODE)_\d+@@"),
    re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]*[\w-]*", re.M),  # marker and type
    re.compile(r"^[ \t]*(?:<!-- i18n:mermaid \d+|-->|\d+:)(?=[ \t]|$)", re.M),  # label list
    re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])(?=[ \t])", re.M),  # list bullets and numbers
    re.compile(r"^ {0,3}#{1,6}(?=[ \t])", re.M),
]
_NUMBER = re.compile(r"(?<![\w@])\d+(?:[.,]\d+)*")
_LATIN_WORD = r"[A-Za-z][A-Za-z'’]*(?:-[A-Za-z]+)*"
_LATIN_RUN = re.compile(
    rf"{_LATIN_WORD}(?:[ \t\n,;:()/\"“”'.!?-]+{_LATIN_WORD}){{{LATIN_RUN_WORDS - 1},}}"
)


def prose(masked: str) -> str:
    """Return the prose of a masked text: code, link targets, URLs, tags and markup removed."""
    for pattern in _NOT_PROSE:
        masked = pattern.sub(" \u2022 ", masked)  # a mark no Latin run crosses
    return masked


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


def untranslated_runs(masked: str, keep: list[str]) -> list[str]:
    """Return the runs of `LATIN_RUN_WORDS` or more Latin-script words in a translation's prose.

    Words of `keep` (the do-not-translate list) do not count as Latin words.
    """
    text = prose(masked)
    for word in sorted(keep, key=len, reverse=True):
        text = re.sub(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", " \u2022 ", text)
    return [" ".join(m.group(0).split()) for m in _LATIN_RUN.finditer(text)]


def check_meaning(english: str, draft: str, lang: str, glossary: Glossary) -> list[str]:
    """Check the meaning-bearing tokens of a masked draft section against its English section.

    Without a model: every number of the English prose is in the translation; the section keeps
    its paragraphs (blocks); no long run of Latin-script words is left untranslated; the
    glossary's required renderings are used and its forbidden ones are not.

    Args:
        english: The masked English section.
        draft: The masked translated section.
        lang: The target language code.
        glossary: The glossary.

    Returns:
        One finding per problem, worded for the model to fix; empty when the draft is sound.

    Example:
        >>> g = Glossary(do_not_translate=[], terms={})
        >>> check_meaning("Wait 30 seconds.\\n", "60 秒待ちます。\\n", "ja", g)
        ['the number 30 appears 1 time(s) in the English but 0 in the translation']
    """
    findings: list[str] = []
    want, got = numbers(english), numbers(draft)
    for number in sorted(want):
        if got[number] < want[number]:
            findings.append(
                f"the number {number} appears {want[number]} time(s) in the English but "
                f"{got[number]} in the translation"
            )
    en_blocks, tr_blocks = paragraph_count(english), paragraph_count(draft)
    if en_blocks != tr_blocks:
        findings.append(
            f"the English has {en_blocks} paragraph(s) or block(s) separated by blank lines, "
            f"the translation {tr_blocks}: translate every paragraph, keep the blank lines"
        )
    for run in untranslated_runs(draft, glossary.do_not_translate):
        shown = run if len(run) <= 80 else run[:77] + "..."
        findings.append(f"untranslated English text: {shown!r}")
    english_prose, draft_prose = prose(english), prose(draft)
    terms = glossary.terms.get(lang, {})
    for term in glossary.require.get(lang, []):
        if mentions(english_prose, term) and terms[term] not in draft_prose:
            findings.append(
                f"the English says {term!r}: the glossary requires {terms[term]!r}, "
                "which the translation does not use"
            )
    for term, renderings in glossary.forbid.get(lang, {}).items():
        if not mentions(english_prose, term):
            continue
        for wrong in renderings:
            legit = any(
                wrong in rendering and mentions(english_prose, other)
                for other, rendering in terms.items()
                if other != term
            )
            if wrong in draft_prose and not legit:
                right = f": use {terms[term]!r}" if term in terms else ""
                findings.append(f"{wrong!r} is a forbidden rendering of {term!r}{right}")
    return findings
