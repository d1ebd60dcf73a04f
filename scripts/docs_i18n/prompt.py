"""The model's instructions and messages, built from the text files in `i18n/`.

Maintainers edit `i18n/prompts/*.md` (the shared prompt, one file of rules per language, and the
task, context and repair messages) and `i18n/glossary.yml`; this module only fills them in.
Template fields are written `{{name}}`; a block `{{?flag}}...{{/flag}}` is kept only when the
request needs it (see `PromptSet.flags`), so a section edit is not sent rules about content it
does not have.
"""

from __future__ import annotations

import hashlib
import json
import re
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
    "Glossary",
    "PromptSet",
    "batch_format",
    "mentions",
    "parse_batch_reply",
    "parse_reply",
    "section_marker",
]

LANGUAGES: dict[str, str] = {"ja": "Japanese", "ko": "Korean", "zh": "Simplified Chinese"}
"""The target languages: code -> the language's name in the prompt."""

SECTION_MARKER_RE = re.compile(r"^<!-- i18n:section (?P<n>\d+) -->[ \t]*$", re.M)


PATCH_GAP = "(changed paragraphs)"
"""Where the translation of a patched section's changed blocks goes, in the context."""


def section_marker(n: int) -> str:
    """Return the marker line that precedes section `n` in a request and in the reply."""
    return f"<!-- i18n:section {n} -->"


_BLOCK_RE = re.compile(r"\{\{\?(\w+)\}\}(.*?)\{\{/\1\}\}", re.S)
_ADMONITION_RE = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]", re.M)

FLAGS = (
    "whole",
    "edit",
    "single",
    "batch",
    "placeholders",
    "admonitions",
    "mermaid",
    "glossary",
    "words",
    "terms",
)
"""The conditions a prompt template's `{{?flag}}` blocks may test."""


def _fill(template: str, flags: dict[str, bool] | None = None, **values: str) -> str:
    def _block(match: re.Match[str]) -> str:
        name = match[1]
        if flags is None or name not in flags:
            raise KeyError(f"unknown template condition {{{{?{name}}}}}")
        return match[2] if flags[name] else ""

    def _value(match: re.Match[str]) -> str:
        name = match[1]
        if name not in values:
            raise KeyError(f"unknown template field {{{{{name}}}}}")
        return values[name]

    return re.sub(r"\{\{(\w+)\}\}", _value, _BLOCK_RE.sub(_block, template))


def mentions(text: str, term: str) -> bool:
    """Whether English `text` uses `term` (case-insensitive, whole words, plural `s` allowed)."""
    pattern = r"(?<![\w-])" + re.escape(term) + r"(?:s|es)?(?![\w-])"
    return re.search(pattern, text, re.I) is not None


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
            ValueError: The file does not have the documented shape.
        """
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
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
        for phrase in self.other_senses.get(term, []):
            english = phrase.sub(" ", english)
        for word in sorted(self.do_not_translate, key=len, reverse=True):
            if term.lower() in word.lower():
                pattern = r"\s+".join(map(re.escape, word.split()))
                english = re.sub(r"(?<![\w-])" + pattern + r"(?![\w-])", " ", english)
        return mentions(english, term)

    def renderings(self, lang: str, term: str) -> list[str]:
        """The forms of `term`'s rendering in `lang` that the checks accept."""
        main = self.terms.get(lang, {}).get(term)
        return ([main] if main else []) + self.accept.get(lang, {}).get(term, [])

    def used_words(self, text: str) -> list[str]:
        """The do-not-translate words that occur in `text` (all of them when `text` is `None`)."""
        return [w for w in self.do_not_translate if w.lower() in text.lower()]

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


@dataclass
class PromptSet:
    """The prompt files of `i18n/prompts/` and the glossary, ready to build messages."""

    common: str
    per_language: dict[str, str]
    task: str
    context: str
    keep: str
    repair: str
    review: str
    review_task: str
    review_repair: str
    task_batch: str
    review_task_batch: str
    glossary: Glossary

    @classmethod
    def load(cls, i18n_dir: Path, languages: list[str]) -> PromptSet:
        """Read `i18n_dir/prompts/*.md` and `i18n_dir/glossary.yml`.

        Raises:
            FileNotFoundError: A prompt file is missing.
            ValueError: The glossary is malformed.
        """
        prompts = i18n_dir / "prompts"

        def _read(name: str) -> str:
            return (prompts / name).read_text(encoding="utf-8")

        glossary = Glossary.load(i18n_dir / "glossary.yml")
        per_language: dict[str, str] = {}
        for lang in languages:
            where = str(prompts / f"{lang}.md")
            try:
                split = split_front_matter(_read(f"{lang}.md"))
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from exc
            per_language[lang] = split.body
            glossary.rules[lang] = LanguageRules.parse(split.data.get("checks"), where)
        return cls(
            common=_read("common.md"),
            per_language=per_language,
            task=_read("task.md"),
            context=_read("context.md"),
            keep=_read("keep.md"),
            repair=_read("repair.md"),
            review=_read("review.md"),
            review_task=_read("review_task.md"),
            review_repair=_read("review_repair.md"),
            task_batch=_read("task_batch.md"),
            review_task_batch=_read("review_task_batch.md"),
            glossary=glossary,
        )

    def glossary_lists(self, lang: str, text: str | None) -> tuple[str, str]:
        """The do-not-translate and term lists for the prompt, limited to those `text` uses.

        With `text=None` every entry is listed.
        """
        glossary = self.glossary
        words = glossary.do_not_translate if text is None else glossary.used_words(text)
        table = glossary.terms.get(lang, {})
        if text is not None:
            table = glossary.used_terms(lang, text)
        forbidden = glossary.forbid.get(lang, {})
        lines = []
        for en, tr in table.items():
            never = forbidden.get(en)
            lines.append(f"- {en} -> {tr}" + (f" (never {', '.join(never)})" if never else ""))
        return (
            "\n".join(f"- {w}" for w in words) or "(none)",
            "\n".join(lines) or "(none)",
        )

    def flags(self, lang: str, text: str | None, *, edit: bool) -> dict[str, bool]:
        """Which `{{?flag}}` blocks of the templates a request needs.

        A rule about content the request does not carry (placeholders, admonition markers,
        diagram labels, glossary entries) is left out; with `text=None` every block is kept.

        Args:
            lang: The target language code.
            text: The (masked) English text the request carries, or `None` for all rules.
            edit: Whether only some sections of the page are sent (a section edit, with the
                neighbours as context) rather than the whole page.
        """
        if text is None:
            return dict.fromkeys(FLAGS, True) | {"whole": not edit, "edit": edit, "batch": False}
        words, terms = self.glossary_lists(lang, text)
        return {
            "whole": not edit,
            "edit": edit,
            "single": True,
            "batch": False,
            "placeholders": "@@" in text,
            "admonitions": _ADMONITION_RE.search(text) is not None,
            "mermaid": "<!-- i18n:mermaid" in text,
            "glossary": (words, terms) != ("(none)", "(none)"),
            "words": words != "(none)",
            "terms": terms != "(none)",
        }

    def instructions(self, lang: str, text: str | None = None, *, edit: bool = False) -> str:
        """Return the instructions (role, rules, language rules, glossary, workflow) for `lang`.

        Args:
            lang: The target language code.
            text: The English text the request carries: only the glossary entries it uses and
                the rules its content needs are included. `None` includes everything.
            edit: Whether the request carries only some sections of the page (`flags`).
        """
        words, terms = self.glossary_lists(lang, text)
        return _fill(
            self.common,
            self.flags(lang, text, edit=edit),
            language=LANGUAGES[lang],
            language_rules=self.per_language[lang].strip(),
            do_not_translate=words,
            terms=terms,
        )

    def task_message(
        self,
        lang: str,
        page: str,
        sections: dict[int, str],
        neighbours: dict[int, str] | None,
        patches: dict[int, tuple[str, str]] | None = None,
        keep: dict[int, str] | None = None,
    ) -> str:
        """Return the user message asking for `sections` (number -> masked English text).

        Args:
            lang: The target language code.
            page: The page's path relative to docs/.
            sections: The sections to translate (for a patched section, its changed blocks).
            neighbours: The current translation of the sections next to the changed ones
                (number -> masked text), sent as context when only some sections changed;
                `None` or empty for a page translated from scratch.
            patches: Section number -> the current translation just before and just after its
                changed blocks, for the sections that changed in some blocks only.
            keep: Section number -> its current translation, corrected by hand or made with
                glossary entries that changed since: the translation to keep (`keep.md`).
        """
        body = "".join(
            f"{section_marker(n)}\n{_ensure_newline(text)}" for n, text in sections.items()
        )
        text = _context_sections(neighbours, patches)
        context = ""
        if text:
            context = _fill(
                self.context,
                {"patch": bool(patches)},
                language=LANGUAGES[lang],
                translation=text,
                gap=PATCH_GAP,
            )
        if keep:
            kept = "".join(
                f"<!-- section {n} -->\n{_ensure_newline(t)}" for n, t in sorted(keep.items())
            )
            context += _fill(self.keep, language=LANGUAGES[lang], translation=kept)
        return _fill(self.task, language=LANGUAGES[lang], page=page, context=context, sections=body)

    def repair_message(self, findings: list[str]) -> str:
        """Return the message sending a failed draft's findings back to the model."""
        return _fill(self.repair, findings="\n".join(f"- {f}" for f in findings))

    def review_instructions(self, lang: str, text: str, *, edit: bool = False) -> str:
        """Return the reviewer's instructions for `lang`.

        Only the glossary entries and the rules that the English `text` needs are included
        (`flags`).
        """
        words, terms = self.glossary_lists(lang, text)
        return _fill(
            self.review,
            self.flags(lang, text, edit=edit),
            language=LANGUAGES[lang],
            do_not_translate=words,
            terms=terms,
        )

    def review_message(self, lang: str, page: str, pairs: dict[int, tuple[str, str]]) -> str:
        """Return the review request: each section's English and draft side by side."""
        body = "".join(
            f'<section n="{n}">\n<english>\n{_ensure_newline(en)}</english>\n'
            f"<translation>\n{_ensure_newline(tr)}</translation>\n</section>\n"
            for n, (en, tr) in pairs.items()
        )
        return _fill(self.review_task, language=LANGUAGES[lang], page=page, sections=body)

    def review_repair_message(self, findings: list[str]) -> str:
        """Return the message sending a reviewer's blocking findings back to the translator."""
        return _fill(self.review_repair, findings="\n".join(f"- {f}" for f in findings))

    def _batch_glossary(self, langs: list[str], text: str) -> tuple[str, str]:
        """The glossary lists of a request for several languages: each term line names its
        language (`- ja: session -> ...`)."""
        words, _ = self.glossary_lists(langs[0], text)
        lines = []
        for lang in langs:
            _, terms = self.glossary_lists(lang, text)
            if terms != "(none)":
                lines += [f"- {lang}: {line[2:]}" for line in terms.splitlines()]
        return words, "\n".join(lines) or "(none)"

    def _batch_flags(self, langs: list[str], text: str, edit: bool) -> dict[str, bool]:
        words, terms = self._batch_glossary(langs, text)
        return self.flags(langs[0], text, edit=edit) | {
            "single": False,
            "batch": True,
            "glossary": (words, terms) != ("(none)", "(none)"),
            "words": words != "(none)",
            "terms": terms != "(none)",
        }

    def batch_instructions(self, langs: list[str], text: str, *, edit: bool) -> str:
        """The instructions of one request translating `text` into every language of `langs`.

        The shared rules once; each language's rules under its name; each term entry with its
        language code; only what `text` needs (`flags`).
        """
        words, terms = self._batch_glossary(langs, text)
        rules = "\n\n".join(
            f"## {LANGUAGES[lang]} ({lang})\n\n{self.per_language[lang].strip()}" for lang in langs
        )
        return _fill(
            self.common,
            self._batch_flags(langs, text, edit),
            language=language_names(langs),
            language_rules=rules,
            do_not_translate=words,
            terms=terms,
        )

    def batch_task_message(
        self,
        langs: list[str],
        page: str,
        sections: dict[int, str],
        contexts: dict[str, tuple[dict[int, str] | None, dict[int, tuple[str, str]]]],
    ) -> str:
        """The user message asking for `sections` in every language of `langs` at once.

        Args:
            langs: The target language codes.
            page: The page's path relative to docs/.
            sections: The sections to translate, the same for every language.
            contexts: Per language, its neighbours and patch context (see `task_message`).
        """
        body = "".join(
            f"{section_marker(n)}\n{_ensure_newline(text)}" for n, text in sections.items()
        )
        translations = ""
        patched = False
        for lang in langs:
            neighbours, patches = contexts.get(lang, (None, {}))
            shown = _context_sections(neighbours, patches)
            patched = patched or bool(patches)
            if shown:
                translations += f"<{lang}>\n{shown}</{lang}>\n\n"
        return _fill(
            self.task_batch,
            {"context": bool(translations), "patch": patched},
            languages=language_names(langs),
            page=page,
            gap=PATCH_GAP,
            translations=translations,
            sections=body,
        )

    def batch_review_instructions(self, langs: list[str], text: str, *, edit: bool) -> str:
        """The reviewer's instructions for drafts of `text` in every language of `langs`."""
        words, terms = self._batch_glossary(langs, text)
        return _fill(
            self.review,
            self._batch_flags(langs, text, edit),
            language=language_names(langs),
            do_not_translate=words,
            terms=terms,
        )

    def batch_review_message(
        self,
        langs: list[str],
        page: str,
        english: dict[int, str],
        drafts: dict[str, dict[int, str]],
    ) -> str:
        """The review request for several languages: each section's English once, then its
        draft in each language."""
        body = ""
        for n, en in english.items():
            body += f'<section n="{n}">\n<english>\n{_ensure_newline(en)}</english>\n'
            for lang in langs:
                body += f"<{lang}>\n{_ensure_newline(drafts[lang][n])}</{lang}>\n"
            body += "</section>\n"
        return _fill(
            self.review_task_batch,
            languages=language_names(langs),
            page=page,
            sections=body,
        )


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
    neighbours: dict[int, str] | None, patches: dict[int, tuple[str, str]] | None
) -> str:
    shown: dict[int, str] = dict(neighbours or {})
    for n, (before, after) in (patches or {}).items():
        parts = [before, PATCH_GAP, after]
        shown[n] = "\n\n".join(p for p in parts if p.strip()) + "\n"
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
