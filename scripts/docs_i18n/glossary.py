"""The glossary (docs/i18n/glossary.yml): terms, do-not-translate words, forbidden variants.

Terms are found in English prose longest first: the words of a longer term are taken by it,
so `conversation history` asks for 对话历史 and not also for the rendering of `history`. Code,
do-not-translate names, reference-link labels and a term's `other_senses` are not prose.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .pages import mask, text_hash

__all__ = ["Glossary", "load_glossary", "prose"]

_MARKER = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]*[\w-]*", re.M)
_LABEL = re.compile(
    r"^[ \t]*\[[^\]^\n][^\]\n]*\]:[^\n]*"  # a reference definition
    r"|\[[^\]\n]*\]\[\]|\]\[[^\]\n]*\]|\]\([^)\n]*\)"  # link labels and targets
    r"|<[^>\n]+>|\{[^}\n]*\}",  # HTML tags, attribute lists
    re.M,
)


def prose(text: str) -> str:
    """`text` without code, link targets, collapsed reference labels, HTML tags, attributes."""
    text = re.sub(
        r"^([ \t]*)(`{3,}|~{3,})mermaid.*?^\1\2[ \t]*$", " ", mask(text).text, flags=re.M | re.S
    )
    text = _MARKER.sub(" ", re.sub(r"@@[BC]\d+@@", " ", text))
    return _LABEL.sub(" ", text)


@functools.cache
def _name(name: str) -> re.Pattern[str]:
    """A do-not-translate `name` as written, its words split by any whitespace."""
    words = r"\s+".join(map(re.escape, name.split()))
    return re.compile(rf"(?<![A-Za-z0-9_-]){words}(?![A-Za-z0-9_-])")


@functools.cache
def _word(term: str) -> re.Pattern[str]:
    """`term` as a whole word, case-insensitive, with plural and -ies/-ied forms."""
    stem = r"\s+".join(map(re.escape, term.split()))
    if term.endswith("y"):
        stem = stem[:-1] + "(?:y|ies|ied)"
    return re.compile(rf"(?<![\w-]){stem}(?:s|es)?(?![\w-])", re.I)


def _contains(text: str, phrase: str) -> bool:
    """Whether `text` has `phrase` (a Latin phrase as whole words)."""
    if phrase.isascii():
        return _name(phrase).search(text) is not None
    return phrase in text


@dataclass
class Glossary:
    """The parsed glossary."""

    do_not_translate: list[str] = field(default_factory=list)
    terms: dict[str, dict[str, str]] = field(default_factory=dict)
    forbid: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    accept: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    other_senses: dict[str, list[str]] = field(default_factory=dict)
    units: dict[str, dict[str, str]] = field(default_factory=dict)
    _cache: dict[tuple[str, str], list[str]] = field(default_factory=dict, repr=False)

    def _found(self, text: str, lang: str | None) -> tuple[list[str], str]:
        """The terms of `lang` (None: the do-not-translate names) in `text`, longest first,
        and `text` without them."""
        words = self.terms.get(lang, {}) if lang else self.do_not_translate
        found, low = [], text.lower()
        for word in sorted(words, key=len, reverse=True):
            if word.lower().rstrip("y").split()[0] not in low:
                continue  # a quick test before the pattern
            pattern = _word(word) if lang else _name(word)
            text, count = pattern.subn(" ", text)
            if count:
                found.append(word)
                low = text.lower()
        return found, text

    def names_in(self, english: str) -> list[str]:
        """The do-not-translate words in the prose of `english`."""
        return self._found(prose(english), None)[0]

    def terms_in(self, english: str, lang: str) -> list[str]:
        """The glossary terms of `lang` in the prose of `english`, longest term first."""
        key = (english, lang)
        if key not in self._cache:
            text = self._found(" ".join(prose(english).split()), None)[1]
            for senses in self.other_senses.values():
                for sense in senses:
                    text = re.sub(sense, " ", text, flags=re.I)
            self._cache[key] = self._found(text, lang)[0]
        return self._cache[key]

    def forms(self, term: str, lang: str) -> list[str]:
        """The rendering of `term` in `lang` and the other forms the checks accept."""
        return [self.terms[lang][term], *self.accept.get(lang, {}).get(term, [])]

    def entries_hash(self, english: str, lang: str) -> str:
        """A hash of what the glossary says about this English text: a change retranslates it."""
        used = {
            term: [self.forms(term, lang), self.forbid.get(lang, {}).get(term, [])]
            for term in self.terms_in(english, lang)
        }
        names = sorted(self.names_in(english))
        return text_hash(json.dumps([dict(sorted(used.items())), names], ensure_ascii=False))

    def check(self, english: str, translation: str, lang: str) -> list[str]:
        """Findings of the terms in a translated section against its English."""
        findings = []
        used = self.terms_in(english, lang)
        rest = prose(translation)
        for term in used:
            forms = self.forms(term, lang)
            if not any(form in rest for form in forms):
                findings.append(f"the English says '{term}': write '{forms[0]}' (glossary)")
        all_forms = sorted({f for t in used for f in self.forms(t, lang)}, key=len, reverse=True)
        for term in used:
            for variant in self.forbid.get(lang, {}).get(term, []):
                # A correct word may hold the variant (历史记录 holds the forbidden 历史), or be
                # it, as another term's rendering (ko 도구 is "tool", and forbidden for "helper"):
                # such words are taken out first. A variant that holds a correct form
                # (フィクスチャー holds フィクスチャ) is looked for as it is.
                text = rest
                for form in all_forms:
                    if variant in form:
                        text = text.replace(form, " ")
                if _contains(text, variant):
                    findings.append(
                        f"'{variant}' stands for '{term}': write '{self.terms[lang][term]}' "
                        "(glossary)"
                    )
        translated = prose(translation)
        for name in self.names_in(english):
            rendering = self.terms.get(lang, {}).get(name.lower())
            if not _name(name).search(translated) and not (rendering and rendering in translated):
                findings.append(f"'{name}' must stay as written (do not translate)")
        return findings


def load_glossary(path: Path) -> Glossary:
    """Read the glossary file; a file that is not a glossary raises `ValueError`."""
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not a readable YAML glossary ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the glossary must be a mapping")
    known = {name for name in Glossary.__dataclass_fields__ if not name.startswith("_")}
    return Glossary(**{key: value or {} for key, value in data.items() if key in known})
