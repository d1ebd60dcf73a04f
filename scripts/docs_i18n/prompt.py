"""The model's instructions and messages, built from the text files in `i18n/`.

Maintainers edit `i18n/prompts/*.md` (the shared prompt, one file of rules per language, and the
task, context and repair messages) and `i18n/glossary.yml`; this module only fills them in.
Each file is a `string.Template` (fields `${name}`); the parts listed under `when:` in its front
matter go into their slots only when the request needs them (`PromptSet.conditions`), so a
section edit is not sent rules about content it does not have.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .front_matter import split_front_matter
from .rules import LanguageRules, Units
from .translator import load_reply_json

__all__ = [
    "LANGUAGES",
    "SECTION_MARKER_RE",
    "Context",
    "Glossary",
    "PromptSet",
    "Template",
    "batch_format",
    "mentions",
    "name_pattern",
    "parse_batch_reply",
    "parse_reply",
    "phrase_pattern",
    "section_marker",
]

LANGUAGES: dict[str, str] = {"ja": "Japanese", "ko": "Korean", "zh": "Simplified Chinese"}
"""The target languages: code -> the language's name in the prompt."""

SECTION_MARKER_RE = re.compile(r"^<!-- i18n:section (?P<n>\d+) -->[ \t]*$", re.M)


PATCH_GAP = "(changed paragraphs)"
"""Where the translation of a patched section's changed blocks goes, in the context."""

SENTENCE_GAP = "(changed sentences)"
"""Where the translation of a paragraph's changed sentences goes, in the context (a patch of
some sentences of one paragraph)."""


def section_marker(n: int) -> str:
    """Return the marker line that precedes section `n` in a request and in the reply."""
    return f"<!-- i18n:section {n} -->"


_CONTENT_RULES = ("placeholders", "admonitions", "mermaid", "glossary")
"""The conditions of the rules about what a request carries (`# Rules for this content`)."""

_ADMONITION_RE = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]", re.M)

_MARKUP_RE = re.compile(
    r"\]\(|\]\[|\[\^|^[ \t]*\[[^\]]+\]:|<[A-Za-z/!]|\{[#.]|:[a-z]+-[a-z0-9-]+:", re.M
)
"""Links, images, reference labels, footnotes, HTML, heading ids and icon shortcodes: a text
without any gets the short rule about what is never translated (`never` in common.md)."""


def phrase_pattern(phrase: str) -> str:
    """The regular expression of `phrase` with any run of whitespace between its words.

    The one rule for finding a glossary term or a do-not-translate name of several words in
    prose, where a line may wrap between them (`pooled\\nconnections`): prompts, checks,
    glossary digests and `--check --terms` all match through it.

    Example:
        >>> bool(re.search(phrase_pattern("tool call"), "a tool\\n  call"))
        True
    """
    return r"\s+".join(map(re.escape, phrase.split()))


# The only characters outside ASCII that a case-insensitive pattern matches with an ASCII
# character (each with a letter): folded to it, they keep `_may_contain` exact.
_ASCII_TWINS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))


@functools.lru_cache(maxsize=64)
def _folded(text: str) -> str:
    """`text` lower-cased, the characters that match an ASCII letter case-insensitively (`ſ`
    for `s`...) turned into that letter."""
    if not text.isascii():
        for twin, letter in _ASCII_TWINS:
            text = text.replace(twin, letter)
    return text.lower()


def _may_contain(text: str, term: str) -> bool:
    """False when no case-insensitive match of `term` can occur in `text`, even after parts of
    it are replaced by a space: some space-free piece of the term is nowhere in the text. A
    cheap test that spares the pattern search most terms (a term beyond ASCII is searched)."""
    if not term.isascii():
        return True
    folded = _folded(text)
    return all(piece in folded for piece in term.lower().split(" "))


def _stem(term: str) -> tuple[str, str]:
    """The part of `term` every form of it starts with, and the pattern of the endings: a term
    ending in a consonant and `y` is also found as `-ies` and `-ied` ("retry" in "the next push
    retries", "a retried call"); any other with a plural `s` or `es`."""
    if re.search(r"[^aeiou\W]y$", term, re.I):
        return term[:-1], r"(?:y|ys|ies|ied)"
    return term, r"(?:s|es)?"


@functools.cache
def _mention_pattern(term: str) -> re.Pattern[str]:
    stem, ending = _stem(term)
    return re.compile(r"(?<![\w-])" + phrase_pattern(stem) + ending + r"(?![\w-])", re.I)


@functools.cache
def name_pattern(name: str) -> re.Pattern[str]:
    """The pattern of a do-not-translate `name` in prose: whole words, case kept."""
    return re.compile(r"(?<![\w-])" + phrase_pattern(name) + r"(?![\w-])")


@functools.cache
def _name_patterns(
    term: str, names: tuple[str, ...]
) -> tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]:
    """The do-not-translate `names` that contain `term`, longest first: each name's words
    (every match of it contains each, as written) and its pattern."""
    return tuple(
        (tuple(name.split()), name_pattern(name))
        for name in sorted(names, key=len, reverse=True)
        if term.lower() in name.lower()
    )


_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The safe loader, in C (libyaml) where PyYAML has it: the glossary loads ten times faster."""


@functools.lru_cache(maxsize=32768)  # each language's checks ask it of the same English
def mentions(text: str, term: str) -> bool:
    """Whether English `text` uses `term` (case-insensitive, whole words, a plural allowed, any
    whitespace, a line break included, between the words of a term of several words; see
    `_stem` for the endings).
    """
    stem = _stem(term)[0]
    if not _may_contain(text, stem):
        return False
    pattern = _mention_pattern(term)
    pieces = stem.lower().split() if stem.isascii() else []
    folded = _folded(text)
    if not pieces or len(folded) != len(text):
        return pattern.search(text) is not None
    # A match starts where the stem's first piece stands in the folded text, which keeps the
    # indices of `text`: the pattern is tried there only, not at every character.
    at = folded.find(pieces[0])
    while at >= 0:
        if pattern.match(text, at) is not None:
            return True
        at = folded.find(pieces[0], at + 1)
    return False


def _uses_term(
    english: str, term: str, senses: tuple[re.Pattern[str], ...], names: tuple[str, ...]
) -> bool:
    """`Glossary.uses`: `term` in `english` outside the phrases `senses` and the `names`."""
    if not _may_contain(english, _stem(term)[0]):  # what the phrases leave is in the English
        return False
    for phrase in senses:
        english = phrase.sub(" ", english)
    for words, pattern in _name_patterns(term, names):
        if all(word in english for word in words):  # else the name is not there
            english = pattern.sub(" ", english)
    return mentions(english, term)


_uses = functools.lru_cache(maxsize=32768)(_uses_term)
"""`_uses_term`, remembered: each language's checks ask it of the same English."""


_Vocabulary = tuple[tuple[str, tuple[re.Pattern[str], ...], tuple[str, ...] | None], ...]
"""Each term of a glossary with its `other_senses` and, for an ASCII term, the lower-cased
pieces of its stem (`_stem`: "retr" for "retry", found in "retries"), which any text using it
contains (as `mentions` tests with `_may_contain`)."""


@functools.lru_cache(maxsize=4096)  # each language's checks ask it of the same English
def _terms_used(english: str, vocabulary: _Vocabulary, names: tuple[str, ...]) -> frozenset[str]:
    """`Glossary.terms_used`: the terms of `vocabulary` that `english` uses outside their
    `other_senses` and the `names`."""
    folded = _folded(english)
    return frozenset(
        term
        for term, senses, pieces in vocabulary
        if (pieces is None or (pieces[0] in folded and all(piece in folded for piece in pieces)))
        and _uses_term(english, term, senses, names)
    )


@functools.lru_cache(maxsize=256)  # the same English page is reviewed in each language
def _used_words(text: str, words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(
        w
        for w in words
        if _may_contain(text, w) and re.search(phrase_pattern(w), text, re.I) is not None
    )


@dataclass
class Glossary:
    """The maintainers' glossary (`i18n/glossary.yml`).

    Attributes:
        do_not_translate: Words kept as written in every language.
        terms: Per language code, English term -> the translation to use (told to the model).
        require: Per language code, the terms of `terms` whose translation the code checks: a
            section whose English uses the term must contain its translation.
        forbid: Per language code, English term -> renderings that must not stand for it
            anywhere on the site (known variants, mistranslations, collisions with another term).
        units: The units checked after numbers (`units:`), in English and each language.
        rules: Per language code, the consistency rules of its prompt file (`checks:`), set by
            `PromptSet.load`.
        other_senses: English term -> phrases (regular expressions) where the English word is
            not the term (`take turns`, `list items`): the term checks skip them.
        accept: Per language code, English term -> other forms of its rendering that the checks
            accept (a shorter or inflected form: `轮` for `轮次`).
    """

    do_not_translate: list[str]
    terms: dict[str, dict[str, str]]
    require: dict[str, list[str]] = field(default_factory=dict)
    forbid: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    units: Units = field(default_factory=Units)
    rules: dict[str, LanguageRules] = field(default_factory=dict)
    other_senses: dict[str, list[re.Pattern[str]]] = field(default_factory=dict)
    accept: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Glossary:
        """Read and validate a glossary file.

        Raises:
            ValueError: The file is not YAML (a merge conflict left in it, say) or does not
                have the documented shape.
        """
        try:
            data: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER) or {}
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            raise ValueError(f"{path} is not valid YAML{line}: {exc}") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping with do_not_translate and terms")
        words = data.get("do_not_translate") or []
        terms = data.get("terms") or {}
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise ValueError(f"{path}: do_not_translate must be a list of strings")
        if not isinstance(terms, dict):
            raise ValueError(f"{path}: terms must map a language code to a term map")
        checked: dict[str, dict[str, str]] = {}
        for lang, table in terms.items():
            if not isinstance(table, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in table.items()
            ):
                raise ValueError(f"{path}: terms.{lang} must map English terms to strings")
            checked[str(lang)] = dict(table)
        require: dict[str, list[str]] = {}
        for lang, listed in (data.get("require") or {}).items():
            table = checked.get(str(lang), {})
            if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
                raise ValueError(f"{path}: require.{lang} must be a list of English terms")
            unknown = [t for t in listed if t not in table]
            if unknown:
                raise ValueError(
                    f"{path}: require.{lang} names {unknown[0]!r}, which has no translation "
                    f"under terms.{lang}"
                )
            require[str(lang)] = list(listed)
        forbid: dict[str, dict[str, list[str]]] = {}
        for lang, table in (data.get("forbid") or {}).items():
            if not isinstance(table, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
                for k, v in table.items()
            ):
                raise ValueError(
                    f"{path}: forbid.{lang} must map English terms to lists of renderings"
                )
            forbid[str(lang)] = {k: list(v) for k, v in table.items()}
        senses: dict[str, list[re.Pattern[str]]] = {}
        for term, phrases in (data.get("other_senses") or {}).items():
            if not isinstance(phrases, list) or not all(isinstance(x, str) for x in phrases):
                raise ValueError(f"{path}: other_senses.{term} must be a list of phrases")
            try:
                senses[str(term)] = [re.compile(x.replace(" ", r"\s+"), re.I) for x in phrases]
            except re.error as exc:
                raise ValueError(f"{path}: other_senses.{term}: bad pattern: {exc}") from exc
        accept: dict[str, dict[str, list[str]]] = {}
        for lang, table in (data.get("accept") or {}).items():
            if not isinstance(table, dict) or not all(
                isinstance(v, list) and all(isinstance(x, str) for x in v) for v in table.values()
            ):
                raise ValueError(f"{path}: accept.{lang} must map English terms to lists of forms")
            accept[str(lang)] = {str(k): list(v) for k, v in table.items()}
        return cls(
            do_not_translate=list(words),
            terms=checked,
            require=require,
            forbid=forbid,
            units=Units.parse(data.get("units"), str(path)),
            other_senses=senses,
            accept=accept,
        )

    def uses(self, english: str, term: str) -> bool:
        """Whether English prose uses `term` as the glossary means it: outside the
        do-not-translate names and the phrases of `other_senses`."""
        senses = tuple(self.other_senses.get(term, ()))
        return _uses(english, term, senses, tuple(self.do_not_translate))

    def terms_used(self, english: str) -> frozenset[str]:
        """The terms of every language (`terms` and `forbid`) that English prose uses (`uses`).

        Worked out once per text for all the terms, and remembered: each language's checks
        ask it of the same English, for a section and for each of its links' texts.
        """
        return _terms_used(english, self._vocabulary, tuple(self.do_not_translate))

    @functools.cached_property
    def _vocabulary(self) -> _Vocabulary:
        """The terms of every language, for `terms_used`; worked out on first use (a glossary
        is not changed once loaded)."""
        listed = dict.fromkeys(t for table in self.terms.values() for t in table)
        listed.update(dict.fromkeys(t for table in self.forbid.values() for t in table))
        return tuple(
            (
                term,
                tuple(self.other_senses.get(term, ())),
                tuple(_stem(term)[0].lower().split()) if term.isascii() else None,
            )
            for term in listed
        )

    def renderings(self, lang: str, term: str) -> list[str]:
        """The forms of `term`'s rendering in `lang` that the checks accept."""
        main = self.terms.get(lang, {}).get(term)
        return ([main] if main else []) + self.accept.get(lang, {}).get(term, [])

    def used_words(self, text: str) -> list[str]:
        """The do-not-translate words that occur in `text` (a name wrapped over two lines too)."""
        return list(_used_words(text, tuple(self.do_not_translate)))

    def digest(self, lang: str, english: str) -> str:
        """The hash of the entries of `lang` whose English term `english` uses.

        An entry is the term's rendering and its forbidden variants; a section is retranslated
        when this hash changes (a term it uses was changed, or a term it uses was added).
        """
        used = {
            term: [rendering, sorted(self.forbid.get(lang, {}).get(term, []))]
            for term, rendering in sorted(self.terms.get(lang, {}).items())
            if mentions(english, term)
        }
        encoded = json.dumps(used, ensure_ascii=False, sort_keys=True).encode("utf-8")
        return f"sha256:{hashlib.sha256(encoded).hexdigest()[:32]}"

    def used_terms(self, lang: str, text: str) -> dict[str, str]:
        """The term entries of `lang` whose English term `text` uses."""
        return {en: tr for en, tr in self.terms.get(lang, {}).items() if mentions(text, en)}


@dataclass(frozen=True)
class Template:
    """A prompt file: a `string.Template` text and the parts put into its slots on a condition.

    The front matter's `when:` maps a condition to `slot: text`; a slot whose condition does not
    hold stays empty. Two conditions may fill the same slot (`single` and `batch`). Example:

        when:
          placeholders:
            placeholders: "- Keep every placeholder exactly once.\\n"
        ---
        # Rules

        ${placeholders}- Do not add or drop content.
    """

    text: string.Template
    when: dict[str, dict[str, str]]

    @classmethod
    def read(cls, path: Path) -> Template:
        """Read a prompt file.

        Raises:
            ValueError: The front matter is not YAML, or its `when:` does not have that shape.
        """
        try:
            split = split_front_matter(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc
        when: Any = split.data.get("when") or {}
        if not isinstance(when, dict) or not all(
            isinstance(parts, dict) and all(isinstance(v, str) for v in parts.values())
            for parts in when.values()
        ):
            raise ValueError(f"{path}: `when` must map a condition to slot: text")
        return cls(string.Template(split.body), {str(c): dict(p) for c, p in when.items()})

    def fill(self, conditions: dict[str, bool] | None = None, /, **values: str) -> str:
        """The text with `values` filled in and each part whose condition holds in its slot.

        Raises:
            KeyError: A condition of `when:` is not in `conditions`, or a field has no value.
        """
        slots: dict[str, str] = {}
        for condition, parts in self.when.items():
            if conditions is None or condition not in conditions:
                raise KeyError(f"unknown prompt condition {condition!r}")
            for slot, text in parts.items():
                if conditions[condition]:
                    slots[slot] = string.Template(text).substitute(values)
                else:
                    slots.setdefault(slot, "")
        return self.text.substitute(values | slots)


_TEMPLATES = (
    "common",
    "task",
    "context",
    "keep",
    "repair",
    "review",
    "review_task",
    "review_repair",
    "task_batch",
    "review_task_batch",
)
"""The prompt files besides the per-language ones: `i18n/prompts/<name>.md`."""


@dataclass
class PromptSet:
    """The prompt files of `i18n/prompts/` and the glossary, ready to build messages.

    Every builder takes the target languages: one language is a request of its own (Markdown
    with section markers); several share one request (`batch_format`: JSON, one field per
    language and section).
    """

    common: Template
    per_language: dict[str, str]
    task: Template
    context: Template
    keep: Template
    repair: Template
    review: Template
    review_task: Template
    review_repair: Template
    task_batch: Template
    review_task_batch: Template
    glossary: Glossary

    @classmethod
    def load(cls, i18n_dir: Path, languages: list[str]) -> PromptSet:
        """Read `i18n_dir/prompts/*.md` and `i18n_dir/glossary.yml`.

        Raises:
            FileNotFoundError: A prompt file is missing.
            ValueError: The glossary or a prompt file's front matter is malformed.
        """
        prompts = i18n_dir / "prompts"
        glossary = Glossary.load(i18n_dir / "glossary.yml")
        per_language: dict[str, str] = {}
        for lang in languages:
            where = str(prompts / f"{lang}.md")
            try:
                split = split_front_matter((prompts / f"{lang}.md").read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from exc
            per_language[lang] = split.body
            glossary.rules[lang] = LanguageRules.parse(split.data.get("checks"), where)
        templates = {name: Template.read(prompts / f"{name}.md") for name in _TEMPLATES}
        return cls(per_language=per_language, glossary=glossary, **templates)

    def glossary_lists(self, langs: list[str], text: str | None) -> tuple[str, str]:
        """The do-not-translate and term lists for the prompt, limited to those `text` uses.

        With `text=None` every entry is listed. With several languages each term line names
        its language (`- ja: session -> ...`). Both lists are sorted (by language, then
        English term, case aside), so that two requests using the same entries share them
        byte for byte, as OpenAI's prompt cache needs.
        """
        glossary = self.glossary
        words = glossary.do_not_translate if text is None else glossary.used_words(text)
        lines = []
        for lang in langs:
            table = glossary.terms.get(lang, {})
            if text is not None:
                table = glossary.used_terms(lang, text)
            forbidden = glossary.forbid.get(lang, {})
            tag = f"{lang}: " if len(langs) > 1 else ""
            for en in sorted(table, key=lambda term: (term.casefold(), term)):
                never = forbidden.get(en)
                lines.append(
                    f"- {tag}{en} -> {table[en]}"
                    + (f" (never {', '.join(never)})" if never else "")
                )
        ordered = sorted(words, key=lambda word: (word.casefold(), word))
        return (
            "\n".join(f"- {w}" for w in ordered) or "(none)",
            "\n".join(lines) or "(none)",
        )

    def conditions(
        self,
        langs: list[str],
        text: str | None,
        *,
        edit: bool,
        lists: tuple[str, str] | None = None,
        self_review: bool = False,
    ) -> dict[str, bool]:
        """Which parts of the instructions (`Template`) a request needs.

        A request for whole pages (`edit=False`) gets every rule and the whole glossary: its
        instructions are then the same for every page of a language, long enough (over 1,024
        tokens) for OpenAI to serve them from its prompt cache after the first request. A
        section edit, a request too small for the cache, gets only the rules about content it
        carries (placeholders, admonition markers, diagram labels, glossary entries); with
        `text=None` every rule is kept.

        Args:
            langs: The target language codes.
            text: The (masked) English text the request carries, or `None` for all rules.
            edit: Whether only some sections of the page are sent (a section edit, with the
                neighbours as context) rather than the whole page.
            lists: `glossary_lists(langs, text)` if the caller has them already.
            self_review: Whether the request reviews its own draft, with no review call after
                it (a small patch: `Job.self_review`): the workflow then lists what to check.
        """
        words, terms = lists or self.glossary_lists(langs, text)
        every = text is None
        needs = {
            "placeholders": every or "@@" in (text or ""),
            "admonitions": every or _ADMONITION_RE.search(text or "") is not None,
            "mermaid": every or "<!-- i18n:mermaid" in (text or ""),
            "glossary": every or (words, terms) != ("(none)", "(none)"),
            "words": every or words != "(none)",
            "terms": every or terms != "(none)",
            "markup": every or _MARKUP_RE.search(text or "") is not None,
        }
        return {
            "whole": not edit,
            "edit": edit,
            "self_review": edit and self_review,
            "single": len(langs) == 1,
            "batch": len(langs) > 1,
            "content": any(
                needs[k] for k in ("placeholders", "admonitions", "mermaid", "glossary")
            ),
            "plain": not needs["markup"],
        } | needs

    def instructions(
        self,
        langs: list[str],
        text: str | None = None,
        *,
        edit: bool = False,
        self_review: bool = False,
    ) -> str:
        """Return the instructions (role, rules, language rules, glossary, workflow).

        Args:
            langs: The target language codes: with several, each language's rules come under
                its name and each term entry with its language code.
            text: The English text the request carries: only the glossary entries it uses and
                the rules its content needs are included. `None` includes everything.
            edit: Whether the request carries only some sections of the page (`conditions`).
            self_review: Whether the request reviews its own draft (`conditions`).
        """
        if not edit:
            text = None  # whole pages: the same instructions for every page (`conditions`)
        rules = self.per_language[langs[0]].strip()
        if len(langs) > 1:
            rules = "\n\n".join(
                f"## {LANGUAGES[lang]} ({lang})\n\n{self.per_language[lang].strip()}"
                for lang in langs
            )
        return self._fill(
            self.common, langs, text, edit=edit, self_review=self_review, language_rules=rules
        )

    def _fill(
        self,
        template: Template,
        langs: list[str],
        text: str | None,
        *,
        edit: bool,
        self_review: bool = False,
        **values: str,
    ) -> str:
        """Fill `template` for a request carrying `text`: its conditions, the glossary entries
        it uses and the language names, with `values`."""
        words, terms = self.glossary_lists(langs, text)
        return template.fill(
            self.conditions(langs, text, edit=edit, lists=(words, terms), self_review=self_review),
            language=language_names(langs),
            do_not_translate=words,
            term_list=terms,
            **values,
        )

    def task_message(
        self,
        langs: list[str],
        page: str,
        sections: dict[int, str],
        contexts: Mapping[str, Context],
        keep: dict[int, str] | None = None,
    ) -> str:
        """Return the user message asking for `sections` (number -> masked English text).

        Args:
            langs: The target language codes.
            page: The page's path relative to docs/.
            sections: The sections to translate (for a patched section, its changed blocks).
            contexts: Per language, the current translation of the sections next to the
                changed ones (number -> masked text; `None` for a page translated from
                scratch) and, for the sections that changed in some blocks only, the current
                translation just before and just after the changed blocks.
            keep: With one language, section number -> its current translation, corrected by
                hand or made with glossary entries that changed since: the translation to keep
                (`keep.md`).
        """
        body = "".join(
            f"{section_marker(n)}\n{_ensure_newline(text)}" for n, text in sections.items()
        )
        shown = {lang: _context_sections(*contexts.get(lang, (None, {}))) for lang in langs}
        patched = any(contexts.get(lang, (None, {}))[1] for lang in langs)
        sentences = any(SENTENCE_GAP in text for text in shown.values())
        if len(langs) > 1:
            return self.task_batch.fill(
                {"context": any(shown.values()), "patch": patched, "sentences": sentences},
                languages=language_names(langs),
                page=page,
                gap=PATCH_GAP,
                sentence_gap=SENTENCE_GAP,
                translations="".join(f"<{k}>\n{v}</{k}>\n\n" for k, v in shown.items() if v),
                sections=body,
            )
        language = LANGUAGES[langs[0]]
        context = ""
        if shown[langs[0]]:
            context = self.context.fill(
                {"patch": patched, "sentences": sentences},
                language=language,
                translation=shown[langs[0]],
                gap=PATCH_GAP,
                sentence_gap=SENTENCE_GAP,
            )
        if keep:
            kept = "".join(
                f"<!-- section {n} -->\n{_ensure_newline(t)}" for n, t in sorted(keep.items())
            )
            context += self.keep.fill(language=language, translation=kept)
        return self.task.fill(language=language, page=page, context=context, sections=body)

    def repair_message(self, findings: list[str]) -> str:
        """Return the message sending a failed draft's findings back to the model."""
        return self.repair.fill(findings="\n".join(f"- {f}" for f in findings))

    def review_instructions(self, langs: list[str], text: str, *, edit: bool = False) -> str:
        """Return the reviewer's instructions.

        Only the glossary entries and the rules that the English `text` needs are included
        (`conditions`).
        """
        return self._fill(self.review, langs, text, edit=edit)

    def review_message(
        self,
        langs: list[str],
        page: str,
        english: dict[int, str],
        drafts: dict[str, dict[int, str]],
    ) -> str:
        """Return the review request: each section's English, then its draft in each language
        (`<translation>` with one language, `<ja>`, `<ko>`... with several)."""
        body = ""
        for n, en in english.items():
            body += f'<section n="{n}">\n<english>\n{_ensure_newline(en)}</english>\n'
            for lang in langs:
                tag = lang if len(langs) > 1 else "translation"
                body += f"<{tag}>\n{_ensure_newline(drafts[lang][n])}</{tag}>\n"
            body += "</section>\n"
        if len(langs) > 1:
            return self.review_task_batch.fill(
                languages=language_names(langs), page=page, sections=body
            )
        return self.review_task.fill(language=LANGUAGES[langs[0]], page=page, sections=body)

    def review_repair_message(self, findings: list[str]) -> str:
        """Return the message sending a reviewer's blocking findings back to the translator."""
        return self.review_repair.fill(findings="\n".join(f"- {f}" for f in findings))


Context = tuple[Mapping[int, str] | None, Mapping[int, str] | None]
"""One language's context of a request: the neighbouring sections' current translation, and
the current translation around each patched section's changed blocks, with `PATCH_GAP` or
`SENTENCE_GAP` where they go (`Job.patch_context`, `PromptSet.task_message`)."""


def language_names(langs: list[str]) -> str:
    """`Japanese, Korean and Simplified Chinese` for `["ja", "ko", "zh"]`."""
    names = [LANGUAGES[lang] for lang in langs]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def batch_format(langs: list[str], sections: list[int]) -> dict[str, Any]:
    """The `text.format` of a request for several languages: one Markdown field per language
    and section, named `<code>.<N>` (the field names stand for the section markers)."""
    names = [f"{lang}.{n}" for lang in langs for n in sections]
    return {
        "type": "json_schema",
        "name": "translation_batch",
        "strict": True,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": names,
            "properties": {name: {"type": "string"} for name in names},
        },
    }


def parse_batch_reply(text: str, langs: list[str], sections: list[int]) -> dict[str, str]:
    """Read a reply for several languages (`batch_format`): language code -> that language's
    sections, each after its marker, as `parse_reply` reads a reply for one language.

    A language with a field missing is left out (it asks again on its own); the others keep
    their part of the reply.

    Raises:
        ValueError: The reply is not a JSON object, or no language has a string for every field.
    """
    try:
        data: Any = load_reply_json(text)
    except ValueError as exc:
        raise ValueError(f"the reply is not usable JSON ({exc}): {text[:80]!r}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"the reply is not a JSON object: {text[:80]!r}")
    names = [f"{lang}.{n}" for lang in langs for n in sections]
    missing = [name for name in names if not isinstance(data.get(name), str)]
    complete = [lang for lang in langs if not any(m.startswith(f"{lang}.") for m in missing)]
    if not complete:
        raise ValueError(f"the reply has no text for {', '.join(missing)}")
    return {
        lang: "".join(
            f"{section_marker(n)}\n{_ensure_newline(data[f'{lang}.{n}'])}" for n in sections
        )
        for lang in complete
    }


def _context_sections(
    neighbours: Mapping[int, str] | None, patches: Mapping[int, str] | None = None
) -> str:
    shown: dict[int, str] = dict(neighbours or {}) | dict(patches or {})
    return "".join(f"<!-- section {n} -->\n{_ensure_newline(t)}" for n, t in sorted(shown.items()))


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def parse_reply(reply: str) -> tuple[dict[int, str], list[str]]:
    """Split the model's reply into sections by their markers.

    A reply wrapped in one Markdown code fence (a common slip) is unwrapped first.

    Returns:
        The sections found (number -> text) and findings about the reply's shape.
    """
    findings: list[str] = []
    text = reply.strip("\n")
    wrapped = re.fullmatch(r"(`{3,}|~{3,})[\w-]*[ \t]*\n(?P<inner>.*)\n\1[ \t]*", text, re.S)
    if wrapped:
        text = wrapped["inner"]
    markers = list(SECTION_MARKER_RE.finditer(text))
    if not markers:
        return {}, ["the reply has no section markers (`<!-- i18n:section N -->`)"]
    if text[: markers[0].start()].strip():
        findings.append("the reply has text before the first section marker")
    sections: dict[int, str] = {}
    for index, marker in enumerate(markers):
        end = markers[index + 1].start() if index + 1 < len(markers) else len(text)
        n = int(marker["n"])
        if n in sections:
            findings.append(f"section {n} appears more than once")
            continue
        sections[n] = text[marker.end() :][: end - marker.end()].lstrip("\n")
    return sections, findings
