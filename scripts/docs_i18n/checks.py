"""The code checks of a translated section against its English section.

The same checks judge a model's draft, a hand edit (`--adopt`) and the pages on disk
(`--check`). A section is cut into blocks at blank lines (a code block is one block); the
translation must have the same blocks in the same order, and each block is compared with its
English block: kind and indentation, code, link targets and their order, list items, table
rows and columns, numbers and units. Then the whole section: heading ids, footnotes, glossary
terms and do-not-translate words, the language's script and register.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from .glossary import Glossary, prose
from .pages import anchor_ids, mask

__all__ = ["Finding", "check_section"]

_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)|\[([^\]\n]*)\]\[([^\]\n]*)\]")
_REF_DEF = re.compile(r"^[ \t]*\[([^\]^][^\]]*)\]:[ \t]*(\S+)", re.M)
_FOOTNOTE = re.compile(r"\[\^([^\]\s]+)\]")
_NUMBER = re.compile(r"(?<![\w.@])\d+(?:[.,]\d+)*")
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_ADMONITION = re.compile(r"^[ \t]*(!!!|\?\?\?\+?|===\+?)[ \t]*([\w-]*)")
_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*+]|\d+[.)])[ \t]+", re.M)

SCRIPT = {"ja": r"[\u3040-\u30ff\u4e00-\u9fff]", "ko": r"[\uac00-\ud7a3]", "zh": r"[\u4e00-\u9fff]"}
FOREIGN = {
    "ja": (r"[\uac00-\ud7a3]", "Korean (Hangul) text on a Japanese page"),
    "ko": (r"[\u3040-\u30ff]", "Japanese (kana) text on a Korean page"),
    "zh": (r"[\u3040-\u30ff\uac00-\ud7a3]", "Japanese or Korean text on a Chinese page"),
}
# Sentence ends in the wrong register (quotes 「…」 and “…” are not searched).
REGISTER = {
    "ja": [
        (
            r"(?:(?<![まで])した|(?<![しっ])た|(?<![でま])す|[うくぐつぬぶむる]|ない|だ)。(?!\*\*)",
            "plain form in prose (write です/ます)",
        )
    ],
    "ko": [
        (r"세요(?=[.!?)]|\s|$)", "해요체 -세요 in prose (write 합니다체)"),
        (r"(?<![니까])다\.(?=\s|$|\))", "한다체 in prose (write 합니다체)"),
    ],
    "zh": [
        (
            r"[\u4e00-\u9fff][,;!?]|[\u4e00-\u9fff]:(?=\s|$)|[\u4e00-\u9fff]\.(?=\s|$)",
            "half-width punctuation in Chinese prose (write ，；！？：。)",
        )
    ],
}
_PROSE_KINDS = ("paragraph", "list", "footnote", "admonition", "quote")  # register checked
_QUOTED = re.compile(r"「[^」\n]*」|“[^”\n]*”|\"[^\"\n]*\"")


@dataclass
class Finding:
    """A problem of a translated section, at a line counted from the section's first line."""

    line: int
    message: str


def _blocks(text: str) -> list[tuple[int, str]]:
    """The blocks of a masked text: (first line index, text), split at blank lines."""
    blocks, current, start = [], [], 0
    for index, line in enumerate(text.split("\n")):
        if line.strip():
            if not current:
                start = index
            current.append(line)
        elif current:
            blocks.append((start, "\n".join(current)))
            current = []
    if current:
        blocks.append((start, "\n".join(current)))
    return blocks


def _kind(block: str) -> str:
    """What a block is, with its indentation: heading, table, list, code, admonition, ..."""
    first = block.split("\n", 1)[0]
    indent = len(first) - len(first.lstrip())
    rest = first.lstrip()
    kinds = [
        (r"#{1,6} ", lambda m: "heading " + first.split()[0]),
        (r"\|", lambda m: "table"),
        (r"@@B\d+@@$", lambda m: "code block"),
        (r"(?:[-*+]|\d+[.)])[ \t]", lambda m: "list"),
        (r"\[\^[^\]]+\]:", lambda m: "footnote"),
        (r"\[[^\]]+\]:", lambda m: "link definitions"),
        (r"(!!!|\?\?\?\+?|===\+?)", lambda m: "admonition " + m.group(1)),
        (r"```|~~~", lambda m: "diagram"),
        (r">", lambda m: "quote"),
        (r"<", lambda m: "html"),
    ]
    for pattern, name in kinds:
        match = re.match(pattern, rest)
        if match:
            return f"{name(match)} at indent {indent}"
    return f"paragraph at indent {indent}"


def _targets(text: str) -> list[str]:
    """Link targets in order: `(url)`, `[text][ref]` (a collapsed `[ref][]` counts as ref)."""
    found = []
    for match in _LINK.finditer(text):
        if match.group(1) is not None:
            found.append(match.group(1))
        else:
            found.append((match.group(3) or match.group(2)).lower())
    return found


def _numbers(text: str, english: bool) -> Counter[str]:
    """The numbers of a prose text (English number words one to ten count as digits)."""
    found = Counter(n.replace(",", "") for n in _NUMBER.findall(text))
    if english:
        for value, word in enumerate(_WORDS):
            found[str(value)] += len(re.findall(rf"\b{word}\b", text, re.I))
    return found


def _with_units(text: str, units: dict[str, dict[str, str]], lang: str) -> Counter[str]:
    """Each number written with a unit: `250 ms` -> `250 ms` (the unit's name)."""
    found: Counter[str] = Counter()
    for unit, forms in units.items():
        form = forms.get(lang, re.escape(unit))
        pattern = rf"(?<![\w.])(\d+(?:[.,]\d+)*)[ \t\u00a0]*(?:{form})(?![a-zA-Z])"
        for number in re.findall(pattern, text):
            found[f"{number.replace(',', '')} {unit}"] += 1
    return found


def _compare_block(en: str, tr: str, glossary: Glossary, lang: str) -> list[str]:
    """Findings of one translated block against its English block."""
    findings = []
    en_codes = Counter(re.findall(r"@@[BC]\d+@@", en))
    tr_codes = Counter(re.findall(r"@@[BC]\d+@@", tr))
    if en_codes != tr_codes:
        findings.append("the code is not the English code (missing, changed or moved)")
    if _targets(en) != _targets(tr):
        findings.append(f"link targets {_targets(tr)} differ from the English {_targets(en)}")
    if sorted(_REF_DEF.findall(en)) != sorted(_REF_DEF.findall(tr)):
        findings.append("link definitions differ from the English")
    if _kind(en).startswith("table"):
        en_rows = [row.count("|") for row in en.split("\n")]
        tr_rows = [row.count("|") for row in tr.split("\n")]
        if en_rows != tr_rows:
            findings.append(f"table of {len(tr_rows)} rows differs in shape from the English")
        else:
            rows = zip(en.split("\n"), tr.split("\n"), strict=True)
            for row, (en_row, tr_row) in enumerate(rows):
                if sorted(re.findall(r"@@C\d+@@", en_row)) != sorted(
                    re.findall(r"@@C\d+@@", tr_row)
                ):
                    findings.append(f"table row {row + 1}: its code is not the English row's")
    en_items = [len(m) for m in _LIST_ITEM.findall(en)]
    tr_items = [len(m) for m in _LIST_ITEM.findall(tr)]
    if en_items != tr_items:
        findings.append(f"{len(tr_items)} list items where the English has {len(en_items)}")
    en_marks = [m.groups() for m in map(_ADMONITION.match, en.split("\n")) if m]
    tr_marks = [m.groups() for m in map(_ADMONITION.match, tr.split("\n")) if m]
    if en_marks != tr_marks:
        findings.append("admonition or tab markers differ from the English")
    en_prose, tr_prose = prose(en), prose(tr)
    en_numbers, tr_numbers = _numbers(en_prose, True), _numbers(tr_prose, False)
    en_digits = _numbers(en_prose, False)
    scaled = re.search(
        r"\b(?:hundred|thousand|million|billion|tenth|half|dozen)s?\b", en_prose, re.I
    )
    for number in sorted(set(en_numbers) | set(tr_numbers)):
        if number.isdigit() and int(number) <= 10:
            if en_digits[number] and not tr_numbers[number]:
                findings.append(f"the number {number} of the English is missing")
        elif not en_numbers[number] and not scaled:
            findings.append(f"the number {number} is not in the English")
        elif not tr_numbers[number] and en_numbers[number]:
            findings.append(f"the number {number} of the English is missing")
    en_units = _with_units(en_prose, glossary.units, "en")
    tr_units = _with_units(tr_prose, glossary.units, lang)
    for value in sorted(set(en_units) - set(tr_units)):
        findings.append(f"'{value}' is not kept with its unit")
    return findings


def check_section(english: str, translation: str, lang: str, glossary: Glossary) -> list[Finding]:
    """Every finding of a translated section against its English section (an empty list: sound).

    Both texts are Markdown with their code in place. The translation's own code is compared
    with the English code, so it must be the English code, unchanged.
    """
    en_mask = mask(english)
    tr = mask(translation)
    if sorted(en_mask.codes) != sorted(tr.codes):
        missing = Counter(en_mask.codes) - Counter(tr.codes)
        extra = Counter(tr.codes) - Counter(en_mask.codes)
        what = [f"missing {c[:40]!r}" for c in missing] + [
            f"not in the English {c[:40]!r}" for c in extra
        ]
        return [Finding(0, "code differs from the English: " + "; ".join(what[:3]))]
    # Number the translation's placeholders as the English numbers the same code.
    spare = {}
    for index, code in enumerate(en_mask.codes):
        spare.setdefault(code, []).append(index)
    tr_text = re.sub(
        r"@@([BC])(\d+)@@",
        lambda m: f"@@{m.group(1)}{spare[tr.codes[int(m.group(2))]].pop(0)}@@",
        tr.text,
    )
    findings: list[Finding] = []
    en_blocks, tr_blocks = _blocks(en_mask.text), _blocks(tr_text)
    en_kinds = [_kind(b) for _, b in en_blocks]
    tr_kinds = [_kind(b) for _, b in tr_blocks]
    if en_kinds != tr_kinds:
        pairs = enumerate(zip(en_kinds, tr_kinds, strict=False))
        at = next((i for i, (en_kind, tr_kind) in pairs if en_kind != tr_kind), None)
        at = min(len(en_kinds), len(tr_kinds)) if at is None else at
        line = tr_blocks[at][0] if at < len(tr_blocks) else translation.count("\n")
        what = en_kinds[at] if at < len(en_kinds) else "nothing"
        findings.append(Finding(line, f"the blocks differ from the English here (expected {what})"))
    else:
        for (_, en_block), (line, tr_block) in zip(en_blocks, tr_blocks, strict=False):
            for message in _compare_block(en_block, tr_block, glossary, lang):
                findings.append(Finding(line, message))
    en_ids = [ident for _, _, ident in anchor_ids(english)]
    tr_ids = [ident for _, _, ident in anchor_ids(translation)]
    if en_ids != tr_ids:
        findings.append(Finding(0, f"heading ids {tr_ids} are not the English {en_ids}"))
    if Counter(_FOOTNOTE.findall(en_mask.text)) != Counter(_FOOTNOTE.findall(tr_text)):
        findings.append(Finding(0, "footnote references differ from the English"))
    findings.extend(Finding(0, m) for m in glossary.check(english, translation, lang))
    findings.extend(_language(prose(english), tr_blocks, lang))
    return findings


def _language(english: str, blocks: list[tuple[int, str]], lang: str) -> list[Finding]:
    """The script and the register of a translated section (`english`: its English prose)."""
    findings = []
    pattern, message = FOREIGN[lang]
    for line, block in blocks:
        if _kind(block).startswith("diagram"):
            continue
        body = prose(block)
        if any(word not in english for word in re.findall(pattern + "+", body)):
            findings.append(Finding(line, message))
        words = re.findall(r"[A-Za-z]{4,}", _QUOTED.sub(" ", body))
        if len(words) >= 8 and not re.search(SCRIPT[lang], body):
            findings.append(Finding(line, "this block is still in English"))
        if _kind(block).startswith(_PROSE_KINDS) or lang == "zh":
            unquoted = _QUOTED.sub(" ", re.sub(r"\*\*[^*\n]+\*\*", " ", body))
            for rule, note in REGISTER[lang]:
                for found in re.finditer(rule, unquoted, re.M):
                    offset = unquoted.count("\n", 0, found.start())
                    findings.append(Finding(line + offset, note))
    return findings
