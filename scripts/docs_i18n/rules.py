"""Consistency rules of a language, read from data, and the engine that applies them.

The rules live in the front matter of each language's prompt file (`i18n/prompts/ja.md`,
`ko.md`, `zh.md`, under `checks:`) next to the prose rules told to the model, and the units in
`i18n/glossary.yml` (`units:`). This module only knows the kinds of rule:

- `prose`: patterns that must not occur in prose (tables, headings, code and links excluded),
  each with the message a finding carries (a wrong speech level, half-width punctuation);
- `table_registers`: register name -> a pattern a table cell written in that register ends
  with; the cells of one table must not use two registers;
- `one_form`: per group (ratios, milliseconds...), form name -> pattern; one page uses one form;
- `foreign_script`: a pattern for text in a script the language never uses (Hangul on a
  Japanese page), with its message;
- `counting` and `number_words`: numbers a translation may add (counters up to `counting`,
  `1 つ` for "a"; the numbers written for English words, `100 万` for "million");
- `length`: the lowest and highest ratio of a paragraph's length to its English's (counted in
  Latin words, CJK characters and Hangul syllables; paragraphs of `min_length` English words or
  more; tables and diagrams left out), so an added or dropped sentence is seen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LanguageRules", "Located", "Rule", "Units"]


@dataclass(frozen=True)
class Located:
    """A finding and where it is: the line (0-based) within the checked section, if known."""

    message: str
    line: int | None = None


@dataclass(frozen=True)
class Rule:
    """A pattern and what a match of it means."""

    pattern: re.Pattern[str]
    message: str


def _compile(value: Any, where: str) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a regular expression as a string, got {value!r}")
    try:
        return re.compile(value, re.M)
    except re.error as exc:
        raise ValueError(f"{where}: bad regular expression {value!r}: {exc}") from exc


def _rule(value: Any, where: str) -> Rule:
    if not isinstance(value, dict) or set(value) != {"pattern", "message"}:
        raise ValueError(f"{where}: expected a mapping with `pattern` and `message`")
    if not isinstance(value["message"], str):
        raise ValueError(f"{where}.message: expected a string")
    return Rule(_compile(value["pattern"], f"{where}.pattern"), value["message"])


def _mapping(data: Any, where: str, shape: str) -> dict[Any, Any] | None:
    """`data` as a mapping, `None` when it is absent; `shape` says what it must be."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: {shape}")
    return data


def _patterns(value: Any, where: str) -> dict[str, re.Pattern[str]]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a mapping of names to regular expressions")
    return {str(k): _compile(v, f"{where}.{k}") for k, v in value.items()}


@dataclass
class LanguageRules:
    """The code-checked consistency rules of one language (see the module docstring)."""

    prose: list[Rule] = field(default_factory=list)
    table_registers: dict[str, re.Pattern[str]] = field(default_factory=dict)
    one_form: dict[str, dict[str, re.Pattern[str]]] = field(default_factory=dict)
    foreign_script: Rule | None = None
    length: tuple[float, float] | None = None
    min_length: int = 25
    counting: int = 0
    number_words: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: Any, where: str) -> LanguageRules:
        """Build the rules from the `checks:` mapping of a prompt file's front matter.

        Raises:
            ValueError: The mapping does not have the documented shape.
        """
        data = _mapping(data, where, "`checks` must be a mapping")
        if data is None:
            return cls()
        known = {
            "prose",
            "table_registers",
            "one_form",
            "foreign_script",
            "length",
            "min_length",
            "counting",
            "number_words",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown key checks.{unknown[0]} (known: {sorted(known)})")
        prose = data.get("prose") or []
        if not isinstance(prose, list):
            raise ValueError(f"{where}: checks.prose must be a list")
        length = data.get("length")
        if length is not None and not (
            isinstance(length, list)
            and len(length) == 2
            and all(isinstance(x, (int, float)) for x in length)
            and 0 < length[0] < length[1]
        ):
            raise ValueError(f"{where}: checks.length must be [lowest, highest] ratios")
        forms = data.get("one_form") or {}
        if not isinstance(forms, dict):
            raise ValueError(f"{where}: checks.one_form must map a group to its forms")
        script = data.get("foreign_script")
        words = data.get("number_words") or {}
        if not isinstance(words, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in words.values()
        ):
            raise ValueError(f"{where}: checks.number_words must map English words to numbers")
        return cls(
            prose=[_rule(v, f"{where}: checks.prose[{i}]") for i, v in enumerate(prose)],
            table_registers=_patterns(
                data.get("table_registers") or {}, f"{where}: checks.table_registers"
            ),
            one_form={
                str(g): _patterns(v, f"{where}: checks.one_form.{g}") for g, v in forms.items()
            },
            foreign_script=_rule(script, f"{where}: checks.foreign_script") if script else None,
            length=(float(length[0]), float(length[1])) if length else None,
            min_length=int(data.get("min_length", 25)),
            counting=int(data.get("counting", 0)),
            number_words={str(k): list(v) for k, v in words.items()},
        )


_DIGIT = re.compile(r"\d")
_NUMBER_START = re.compile(r"(?<![\w@.])(?=[-−]?\d)")
"""Where a number of a unit's pattern (`Units.parse`) may start."""


@dataclass
class Units:
    """Units after numbers: unit name -> per language (`en` included) the pattern of its forms."""

    forms: dict[str, dict[str, re.Pattern[str]]] = field(default_factory=dict)
    _memo: dict[tuple[str, str], list[tuple[str, re.Match[str]]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def parse(cls, data: Any, where: str) -> Units:
        """Read the glossary's `units:` mapping.

        Raises:
            ValueError: The mapping does not have the documented shape.
        """
        data = _mapping(data, where, "units must map a unit to its forms per language")
        if data is None:
            return cls()
        forms: dict[str, dict[str, re.Pattern[str]]] = {}
        for unit, table in data.items():
            if not isinstance(table, dict) or "en" not in table:
                raise ValueError(f"{where}: units.{unit} must map language codes (en too) to forms")
            forms[str(unit)] = {
                str(lang): re.compile(
                    r"(?<![\w@.])(?P<n>[-−]?\d+(?:[.,]\d+)*)[ \t\u00a0]*(?:" + str(p) + r")"
                    r"(?![A-Za-z])"
                )
                for lang, p in table.items()
            }
        return cls(forms)

    def starts(self, prose: str, lang: str) -> set[int]:
        """Where the numbers of `prose` that carry a unit start."""
        return {m.start("n") for _, m in self._matches(prose, lang)}

    def pairs(self, prose: str, lang: str) -> dict[tuple[str, str], int]:
        """Count the (number, unit) pairs of `prose` in language `lang`."""
        found: dict[tuple[str, str], int] = {}
        for unit, m in self._matches(prose, lang):
            key = (m["n"].replace("−", "-").replace(",", ""), unit)
            found[key] = found.get(key, 0) + 1
        return found

    def _matches(self, prose: str, lang: str) -> list[tuple[str, re.Match[str]]]:
        """Each unit's matches in `prose` (as its pattern's `finditer` finds them), unit by
        unit; remembered, the English of a section being checked once per language.

        Every match starts where a number may start (`_NUMBER_START`): each unit's pattern is
        tried only there, instead of being run over the whole text.
        """
        key = (prose, lang)
        found = self._memo.get(key)
        if found is not None:
            return found
        found = []
        if _DIGIT.search(prose) is not None:  # no number, no unit after one
            places = [m.start() for m in _NUMBER_START.finditer(prose)]
            for unit, table in self.forms.items():
                pattern = table.get(lang)
                if pattern is None:
                    continue
                end = 0
                for place in places:
                    if place < end:
                        continue
                    m = pattern.match(prose, place)
                    if m is not None:
                        found.append((unit, m))
                        end = m.end()
        if len(self._memo) > 4096:
            self._memo.clear()
        self._memo[key] = found
        return found
