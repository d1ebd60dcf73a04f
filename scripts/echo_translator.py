"""A deterministic stand-in for the translation model and the reviewer, served by the fake
OpenAI server.

`EchoTranslator` answers `POST /v1/responses` like a translator that follows the rules: it
reads the sections between `<source>` and `</source>` in the first user message and returns
them with their markers, every prose word "translated" (a glossary term by the rendering the
request's term list gives, a few common words by a fixed list, any other word marked with a
language suffix, so no English run is left), a language tag on every heading, and placeholders,
link targets, markers and HTML untouched. Faults can be queued per page to play a model that
breaks things, in structure (`drop_code`, ...) or in meaning (`drop_sentence`, `flip_negation`,
...).

A review request (one with a JSON schema `text.format`) is answered by a fake reviewer: it
translates each English section the same way and compares, sentence by sentence, with the
draft; a missing sentence is an omission, a different one a meaning shift (blockers, with
literal quotes). Review faults can be queued too (`bogus_quotes`, `minor`, `malformed`,
`stubborn`).

A request for several languages (`text.format` named `translation_batch`, or
`translation_review_batch` for its review) is answered per language the same way, each
language's queued fault applied to that language only, as one JSON object.

Run it as a server for local simulations of the CI job:

    python scripts/echo_translator.py [--latency 0]

It prints `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1` (a free port); point the script at it with
that variable and any OPENAI_API_KEY.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnstore.testing import FakeOpenAIServer, FakeReply, RecordedRequest, text_response

__all__ = [
    "FAULTS",
    "MEANING_FAULTS",
    "REVIEW_FAULTS",
    "EchoTranslator",
    "Glossary",
    "echo_translate",
    "serve",
]

_WORDS: dict[str, dict[str, str]] = {
    "ja": {"the": "その", "not": "ない", "never": "決して"},
    "ko": {"the": "그", "not": "않", "never": "절대"},
    "zh": {"the": "这个", "not": "不", "never": "从不"},
}
_UNITS: dict[str, dict[str, str]] = {
    "ja": {"second": "秒", "minute": "分", "hour": "時間", "millisecond": "ミリ秒", "year": "年"},
    "ko": {"second": "초", "minute": "분", "hour": "시간", "millisecond": "밀리초", "year": "년"},
    "zh": {"second": "秒", "minute": "分钟", "hour": "小时", "millisecond": "毫秒", "year": "年"},
}
for _lang, _units in _UNITS.items():  # units are translated, in the singular and the plural
    _WORDS[_lang].update(_units)
    _WORDS[_lang].update({f"{word}s": unit for word, unit in _units.items()})
_SUFFIX = {"ja": "語", "ko": "어", "zh": "语"}
_FULL_WIDTH = {",": "，", ";": "；", "!": "！", "?": "？", ".": "。", ":": "："}
_TAGS = {"ja": "（訳）", "ko": "(번역)", "zh": "（译）"}
_LANG_BY_NAME = {"Japanese": "ja", "Korean": "ko", "Simplified Chinese": "zh"}
_PROTECTED = re.compile(
    r"(<!-- i18n:mermaid \d+|^[ \t]*\d+: |\[[^\]\[]*\]\[\]|\]\([^)]*\)|\]\[[^\]]*\]"
    r"|\[\^[^\]]*\]|<[^>]*>|@@\w+@@|\{[^}]*\}"
    r"|https?://\S+|:[a-z]+-[a-z0-9-]+:|^\s*\[[^\]]*\]:.*$"
    r"|^[ \t]*(?:!!!|\?\?\?\+?|===\+?)[ \t]*[\w-]*)",
    re.M,
)
_HEADING = re.compile(r"^( {0,3}#{1,6} )(.*)$")


@dataclass
class Glossary:
    """The glossary entries a request lists (do-not-translate words, terms, forbidden ones)."""

    keep: list[str] = field(default_factory=list)
    terms: dict[str, str] = field(default_factory=dict)
    never: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_instructions(cls, instructions: str, lang: str | None = None) -> Glossary:
        """The entries listed in `instructions`; in a request for several languages, where
        each term line starts with its language code, those of `lang`."""
        glossary = cls()
        keep = re.search(r"# Do not translate\n\n(.*?)(?:\n\n#|\Z)", instructions, re.S)
        if keep:
            glossary.keep = re.findall(r"(?m)^- (.+)$", keep[1])
        terms = re.search(r"# Terms\n\n(.*?)(?:\n\n#|\Z)", instructions, re.S)
        for line in re.findall(r"(?m)^- (.+)$", terms[1] if terms else ""):
            tagged = re.fullmatch(r"(ja|ko|zh): (.+)", line)
            if tagged:
                if tagged[1] != lang:
                    continue
                line = tagged[2]
            found = re.fullmatch(r"(.+?) -> (.+?)(?: \(never (.+)\))?", line)
            if found:
                glossary.terms[found[1]] = found[2]
                if found[3]:
                    glossary.never[found[1]] = found[3].split(", ")
        return glossary


# The characters beyond ASCII that a case-insensitive pattern matches with an ASCII letter.
_ASCII_TWINS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))


def _may_hold(text: str, term: str) -> bool:
    """False when `term` cannot match `text` case-insensitively (a cheap test before the
    pattern)."""
    if not term.isascii():
        return True
    if not text.isascii():
        for twin, letter in _ASCII_TWINS:
            text = text.replace(twin, letter)
    return term.lower() in text.lower()


@functools.cache
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")


def _stem_and_endings(term: str) -> tuple[str, str]:
    """How a model reads a term's forms: "retry" as "retries" and "retried" too (a consonant and
    `y`), any other term with a plural `s` or `es`."""
    if re.search(r"[^aeiou\W]y$", term, re.I):
        return term[:-1], "(?:y|ys|ies|ied)"
    return term, "(?:s|es)?"


@functools.cache
def _term_pattern(term: str) -> re.Pattern[str]:
    stem, endings = _stem_and_endings(term)
    return re.compile(rf"(?<![\w-]){re.escape(stem)}{endings}(?![\w-])", re.I)


def _translate_prose(text: str, lang: str, glossary: Glossary) -> str:
    names = sorted(glossary.keep, key=len, reverse=True)
    terms = sorted(glossary.terms.items(), key=lambda kv: len(kv[0]), reverse=True)
    slots: list[str] = []

    def _slot(value: str) -> str:
        slots.append(value)
        return f"\x00{len(slots) - 1}\x00"

    # A term holding a name ("the CLI's store") first, the name kept before its rendering.
    held = {term: [n for n in names if _name_pattern(n).search(term)] for term, _ in terms}
    for term, rendering in terms:
        if held[term] and _may_hold(text, _stem_and_endings(term)[0]):
            kept = " ".join([*held[term], rendering])
            text = _term_pattern(term).sub(lambda _m, r=kept: _slot(r), text)
    for name in names:
        if name in text:
            text = _name_pattern(name).sub(lambda m: _slot(m[0]), text)
    for term, rendering in terms:
        if not held[term] and _may_hold(text, _stem_and_endings(term)[0]):
            text = _term_pattern(term).sub(lambda _m, r=rendering: _slot(r), text)
    words = _WORDS[lang]
    text = re.sub(
        r"[A-Za-z]+(?:'[a-z]+)?",
        lambda m: words.get(m[0].lower(), m[0] + _SUFFIX[lang]),
        text,
    )
    text = re.sub("\x00(\\d+)\x00", lambda m: slots[int(m[1])], text)
    if lang == "zh":  # full-width punctuation after Chinese, as the Chinese rules ask
        text = re.sub(r"(?<=[\u4e00-\u9fff])[,;!?]", lambda m: _FULL_WIDTH[m[0]], text)
        text = re.sub(r"(?<=[\u4e00-\u9fff])[.:](?=\s|$)", lambda m: _FULL_WIDTH[m[0]], text)
    return text


def _translate_text(text: str, lang: str, glossary: Glossary) -> str:
    parts = _PROTECTED.split(text)
    for index in range(0, len(parts), 2):
        parts[index] = _translate_prose(parts[index], lang, glossary)
    return "".join(parts)


def _unwrap(found: re.Match[str]) -> str:
    """A phrase found over two lines, on one line, the line break and indent after it."""
    if "\n" not in found[0]:
        return found[0]
    rest = found[0].split("\n", 1)[1]
    indent = rest[: len(rest) - len(rest.lstrip(" \t"))]
    return " ".join(found[0].split()) + "\n" + indent


def echo_translate(source: str, lang: str, glossary: Glossary | None = None) -> str:
    """Translate the `<source>` block's content the way a well-behaved model would."""
    glossary = glossary or Glossary()
    # A name or a term wrapped over two lines moves onto the first, the line break after it.
    wrappable: list[tuple[str, int, str]] = [(name, 0, "") for name in glossary.keep]
    for term in glossary.terms:
        stem, endings = _stem_and_endings(term)
        wrappable.append((stem, re.I, endings))
    for phrase, flags, plural in wrappable:
        if " " in phrase:
            words = r"(?:[ \t]*\n[ \t]*|[ \t]+)".join(map(re.escape, phrase.split()))
            wrapped = rf"(?<![\w-])(?:{words}){plural}(?![\w-])"
            source = re.sub(wrapped, _unwrap, source, flags=flags)
    out = []
    for line in source.splitlines(keepends=True):
        if line.startswith("<!-- i18n:section"):
            out.append(line)
            continue
        heading = _HEADING.match(line.rstrip("\n"))
        if heading:
            newline = line[len(line.rstrip("\n")) :]
            text = _translate_text(heading[2], lang, glossary)
            out.append(f"{heading[1]}{text} {_TAGS[lang]}{newline}")
            continue
        out.append(_translate_text(line, lang, glossary))
    return "".join(out)


# -- faults of the translator ---------------------------------------------------------------------

Fault = Callable[[str, str, Glossary], str]
"""A way to break a draft: (draft, English source, glossary) -> broken draft."""


def _drop_code(text: str, source: str, glossary: Glossary) -> str:
    return re.sub(r"(?m)^[ \t]*@@BLOCK_\d+@@\n", "", text, count=1)


def _change_link(text: str, source: str, glossary: Glossary) -> str:
    return re.sub(r"\]\(([^)]*)\)", r"](changed-\1)", text, count=1)


def _lose_heading(text: str, source: str, glossary: Glossary) -> str:
    return re.sub(r"(?m)^#{2,6} .*\n", "", text, count=1)


def _garbage(text: str, source: str, glossary: Glossary) -> str:
    return "I'm sorry, but I can only help with translations of complete documents."


_PROSE_LINE = r"(?m)^(?![ \t]*(?:#|@@|!!!|\?\?\?|===|[-*+] |\d+[.)] |\||<|>|\[))"


def _drop_sentence(text: str, source: str, glossary: Glossary) -> str:
    """Drop a sentence without digits that ends in the middle of a prose line."""
    for found in re.finditer(
        r"(?m)(?:^|(?<=[.!?。！？] ))([^\n.!?。！？]*[.!?。！？] )(?=\S)", text
    ):
        sentence = found[1]
        line = text[text.rfind("\n", 0, found.start()) + 1 : found.start()]
        if re.search(r"\d|@@", sentence) or re.match(r"[ \t]*(?:#|[-*+] |\d+[.)] |>|\|)", line):
            continue
        return text[: found.start(1)] + text[found.end(1) :]
    raise AssertionError("no sentence to drop in the draft")


def _drop_list_item(text: str, source: str, glossary: Glossary) -> str:
    return re.sub(r"(?m)^- [^\n]*\n", "", text, count=1)


def _change_number(text: str, source: str, glossary: Glossary) -> str:
    def _bump(match: re.Match[str]) -> str:
        return str(int(match[0]) + 1)

    changed = re.sub(r"(?<![\w@])(?<!section )\d+(?![\w@])", _bump, text, count=1)
    assert changed != text, "no number to change in the draft"
    return changed


def _flip_negation(text: str, source: str, glossary: Glossary) -> str:
    words = "|".join(re.escape(w[n]) for w in _WORDS.values() for n in ("not", "never"))
    changed = re.sub(rf"(?:{words}) ?", "", text, count=1)
    assert changed != text, "no negation to flip in the draft"
    return changed


def _untranslated_paragraph(text: str, source: str, glossary: Glossary) -> str:
    """Put back the English of the first prose paragraph of three or more words."""
    english = re.findall(_PROSE_LINE + r"([A-Za-z][^\n]{30,})$", source)
    assert english, "no English paragraph to leave untranslated"
    for line in english:
        translated = _translate_text(line, _lang_of(text), glossary)
        if translated in text:
            return text.replace(translated, line, 1)
    raise AssertionError("the English paragraph is not in the draft")


def _lang_of(text: str) -> str:
    for lang, tag in _TAGS.items():
        if tag in text:
            return lang
    return "ja"


def _forbidden_term(text: str, source: str, glossary: Glossary) -> str:
    for term, wrong in glossary.never.items():
        right = glossary.terms[term]
        if right in text:
            return text.replace(right, wrong[0], 1)
    raise AssertionError("no term with a forbidden rendering in the draft")


def _swap_sections(text: str, source: str, glossary: Glossary) -> str:
    """Swap the contents of the first two sections of the reply, each keeping its heading (a
    reply that put each section's translation under the other's marker)."""
    parts = re.split(r"(?m)^(<!-- i18n:section \d+ -->\n)", text)
    bodies = [i for i in range(2, len(parts), 2) if parts[i].strip()]
    if len(bodies) < 2:
        raise AssertionError("no two sections to swap in the draft")
    a, b = bodies[0], bodies[1]

    def _split(section: str) -> tuple[str, str]:
        lines = section.splitlines(keepends=True)
        head = [line for line in lines[:1] if line.lstrip().startswith("#")]
        return "".join(head), "".join(lines[len(head) :])

    (head_a, body_a), (head_b, body_b) = _split(parts[a]), _split(parts[b])
    parts[a], parts[b] = head_a + body_b, head_b + body_a
    return "".join(parts)


FAULTS: dict[str, Fault] = {
    "drop_code": _drop_code,
    "change_link": _change_link,
    "lose_heading": _lose_heading,
    "garbage": _garbage,
}
"""Named ways to break a draft's structure."""

MEANING_FAULTS: dict[str, Fault] = {
    "drop_sentence": _drop_sentence,
    "drop_list_item": _drop_list_item,
    "change_number": _change_number,
    "flip_negation": _flip_negation,
    "untranslated_paragraph": _untranslated_paragraph,
    "forbidden_term": _forbidden_term,
    "swap_sections": _swap_sections,
}
"""Named ways to break a draft's meaning while its structure stays sound."""

REVIEW_FAULTS = ("bogus_quotes", "minor", "malformed", "stubborn", "silent")
"""Named ways the fake reviewer can misbehave: quotes that occur nowhere, an extra minor
finding, a reply that is not JSON, a blocker it reports whatever the draft, or no finding."""


# -- the fake reviewer ----------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?。！？])\s+", flat) if s]


def review_findings(
    pairs: dict[int, tuple[str, str]], lang: str, glossary: Glossary
) -> list[dict[str, Any]]:
    """Compare each draft with the echo translation of its English; one finding per difference."""
    findings: list[dict[str, Any]] = []
    for n, (english, draft) in pairs.items():
        en_sentences = _sentences(english)
        expected = _sentences(echo_translate(english, lang, glossary))
        got = _sentences(draft)
        if len(expected) != len(en_sentences):  # pragma: no cover - a split that moved
            raise AssertionError(f"sentences do not line up in section {n}")
        matcher = difflib.SequenceMatcher(a=expected, b=got, autojunk=False)
        for op, a1, a2, b1, _b2 in matcher.get_opcodes():
            if op == "equal":
                continue
            if op in ("delete", "replace") and a2 > a1:
                quote = got[b1] if b1 < len(got) else (got[b1 - 1] if got else "")
                findings.append(
                    {
                        "section": n,
                        "kind": "omission" if op == "delete" else "meaning",
                        "severity": "blocker",
                        "english": en_sentences[a1],
                        "translation": quote,
                        "problem": "the translation does not say what this English says",
                    }
                )
            elif op == "insert":
                findings.append(
                    {
                        "section": n,
                        "kind": "addition",
                        "severity": "blocker",
                        "english": en_sentences[min(a1, len(en_sentences) - 1)],
                        "translation": got[b1],
                        "problem": "the translation adds this",
                    }
                )
    return findings


def _review_pairs(message: str) -> dict[int, tuple[str, str]]:
    pairs: dict[int, tuple[str, str]] = {}
    for found in re.finditer(
        r'<section n="(\d+)">\n<english>\n(.*?)</english>\n<translation>\n(.*?)</translation>',
        message,
        re.S,
    ):
        pairs[int(found[1])] = (found[2], found[3])
    return pairs


class EchoTranslator:
    """A route handler for `FakeOpenAIServer` that plays the translation model and the reviewer.

    Args:
        latency: Seconds to wait before each answer.

    Attributes:
        calls: The translations asked for, as (language, page, section numbers); a request
            for several languages adds one per language.
        reviews: The reviews asked for, as (language, page, section numbers), likewise.
        batches: The requests for several languages, as (languages, page, section numbers).
        review_batches: The reviews of several languages, likewise.
        max_in_flight: The most requests being answered at the same time.
    """

    def __init__(self, *, latency: float = 0.0) -> None:
        self.latency = latency
        self.calls: list[tuple[str, str, list[int]]] = []
        self.reviews: list[tuple[str, str, list[int]]] = []
        self.batches: list[tuple[list[str], str, list[int]]] = []
        self.review_batches: list[tuple[list[str], str, list[int]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: dict[tuple[str, str], list[str | FakeReply]] = defaultdict(list)
        self._review_faults: dict[tuple[str, str], list[str | FakeReply]] = defaultdict(list)
        self._lock = threading.Lock()

    def fault(self, lang: str, page: str, *faults: str | FakeReply) -> None:
        """Queue faults for the next translation calls about `page` in `lang`.

        Each fault is a name from `FAULTS` or `MEANING_FAULTS` (the draft is broken that way)
        or a `FakeReply` (sent as is: an HTTP error, a delay that provokes a timeout, ...).
        """
        with self._lock:
            self._faults[(lang, page)].extend(faults)

    def review_fault(self, lang: str, page: str, *faults: str | FakeReply) -> None:
        """Queue faults for the next review calls about `page` in `lang` (`REVIEW_FAULTS`)."""
        with self._lock:
            self._review_faults[(lang, page)].extend(faults)

    def install(self, server: FakeOpenAIServer) -> EchoTranslator:
        """Answer `POST /v1/responses` on `server` (a started one); returns `self`."""
        server.route("POST", "/v1/responses", self)
        return self

    def _wait(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.latency)
        finally:
            with self._lock:
                self.in_flight -= 1

    def __call__(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("input") or []
        first = messages[0]["content"] if messages and isinstance(messages[0], dict) else ""
        instructions = str(body.get("instructions") or "")
        glossary = Glossary.from_instructions(instructions)
        fmt = (body.get("text") or {}).get("format", {})
        if fmt.get("name") == "translation_batch":
            langs = sorted({name.split(".")[0] for name in fmt["schema"]["required"]})
            return self._translate_batch(first, instructions, langs)
        if fmt.get("name") == "translation_review_batch":
            langs = list(
                fmt["schema"]["properties"]["findings"]["items"]["properties"]["language"]["enum"]
            )
            return self._review_batch(first, instructions, langs)
        if fmt.get("type") == "json_schema":
            return self._review(first, glossary)
        found = re.search(r"<source>\n(.*)</source>", first, re.S)
        name = re.search(r"into (Japanese|Korean|Simplified Chinese)", first)
        page = re.search(r"the page `([^`]+)`", first)
        if not (found and name and page):
            return FakeReply(status=400, body={"error": {"message": "not a translation request"}})
        lang, path, source = _LANG_BY_NAME[name[1]], page[1], found[1]
        numbers = [int(n) for n in re.findall(r"<!-- i18n:section (\d+) -->", source)]
        with self._lock:
            self.calls.append((lang, path, numbers))
            queued = self._faults.get((lang, path))
            fault = queued.pop(0) if queued else None
        self._wait()
        if isinstance(fault, FakeReply):
            return fault
        text = echo_translate(source, lang, glossary)
        if fault is not None:
            text = {**FAULTS, **MEANING_FAULTS}[fault](text, source, glossary)
        return text_response(
            text, input_tokens=len(first) // 4 + 1000, output_tokens=len(text) // 2 + 500
        )

    def _translate_batch(
        self, message: str, instructions: str, langs: list[str]
    ) -> FakeReply | dict[str, Any]:
        """One request for several languages: a JSON object with each language's sections."""
        found = re.search(r"<source>\n(.*)</source>", message, re.S)
        page = re.search(r"sections of `([^`]+)`", message)
        if not (found and page):
            return FakeReply(status=400, body={"error": {"message": "not a translation request"}})
        path, source = page[1], found[1]
        numbers = [int(n) for n in re.findall(r"<!-- i18n:section (\d+) -->", source)]
        with self._lock:
            self.batches.append((list(langs), path, numbers))
            self.calls += [(lang, path, numbers) for lang in langs]
            faults = {}
            for lang in langs:
                queued = self._faults.get((lang, path))
                faults[lang] = queued.pop(0) if queued else None
        self._wait()
        for fault in faults.values():
            if isinstance(fault, FakeReply):
                return fault
        texts = {}
        for lang in langs:
            glossary = Glossary.from_instructions(instructions, lang)
            text = echo_translate(source, lang, glossary)
            fault = faults[lang]
            if isinstance(fault, str):
                text = {**FAULTS, **MEANING_FAULTS}[fault](text, source, glossary)
            texts[lang] = text
        fields = {}
        for lang, text in texts.items():
            parts = re.split(r"(?m)^<!-- i18n:section (\d+) -->\n", text)
            for n, part in zip(parts[1::2], parts[2::2], strict=True):
                fields[f"{lang}.{n}"] = part.removesuffix("\n")
        reply = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        return text_response(
            reply, input_tokens=len(message) // 4 + 1000, output_tokens=len(reply) // 2 + 500
        )

    def _review_batch(
        self, message: str, instructions: str, langs: list[str]
    ) -> FakeReply | dict[str, Any]:
        """One review of several languages: each finding names its language."""
        page = re.search(r"the page `([^`]+)`", message)
        if not page:
            return FakeReply(status=400, body={"error": {"message": "not a review request"}})
        path = page[1]
        pairs: dict[str, dict[int, tuple[str, str]]] = {lang: {} for lang in langs}
        for section in re.finditer(
            r'<section n="(\d+)">\n<english>\n(.*?)</english>\n(.*?)</section>', message, re.S
        ):
            for lang, draft in re.findall(r"<(ja|ko|zh)>\n(.*?)</\1>\n", section[3], re.S):
                pairs[lang][int(section[1])] = (section[2], draft)
        with self._lock:
            self.review_batches.append((list(langs), path, sorted(pairs[langs[0]])))
            self.reviews += [(lang, path, sorted(pairs[lang])) for lang in langs]
            faults = {}
            for lang in langs:
                queued = self._review_faults.get((lang, path))
                faults[lang] = queued.pop(0) if queued else None
        self._wait()
        for fault in faults.values():
            if isinstance(fault, FakeReply):
                return fault
        if "malformed" in faults.values():
            return text_response('{"findings": [{"section": 1, "kind": "omis')
        findings = []
        for lang in langs:
            glossary = Glossary.from_instructions(instructions, lang)
            found = self._findings(lang, path, pairs[lang], glossary, faults[lang])
            findings += [{"language": lang, **f} for f in found]
        return text_response(
            json.dumps({"findings": findings}, ensure_ascii=False),
            input_tokens=len(message) // 4 + 800,
            output_tokens=200,
        )

    def _review(self, message: str, glossary: Glossary) -> FakeReply | dict[str, Any]:
        name = re.search(r"Review the (Japanese|Korean|Simplified Chinese) translation", message)
        page = re.search(r"the page `([^`]+)`", message)
        if not (name and page):
            return FakeReply(status=400, body={"error": {"message": "not a review request"}})
        lang, path = _LANG_BY_NAME[name[1]], page[1]
        pairs = _review_pairs(message)
        with self._lock:
            self.reviews.append((lang, path, sorted(pairs)))
            queued = self._review_faults.get((lang, path))
            fault = queued.pop(0) if queued else None
        self._wait()
        if isinstance(fault, FakeReply):
            return fault
        if fault == "malformed":
            return text_response('{"findings": [{"section": 1, "kind": "omis')
        findings = self._findings(lang, path, pairs, glossary, fault)
        return text_response(
            json.dumps({"findings": findings}, ensure_ascii=False),
            input_tokens=len(message) // 4 + 800,
            output_tokens=200,
        )

    def _findings(
        self,
        lang: str,
        path: str,
        pairs: dict[int, tuple[str, str]],
        glossary: Glossary,
        fault: str | None,
    ) -> list[dict[str, Any]]:
        """The fake reviewer's findings about one language's drafts, with `fault` played."""
        findings = [] if fault == "silent" else review_findings(pairs, lang, glossary)
        first, (english, draft) = next(iter(pairs.items()))
        if fault == "bogus_quotes":
            findings.append(
                {
                    "section": first,
                    "kind": "omission",
                    "severity": "blocker",
                    "english": "a sentence the English never had",
                    "translation": _sentences(draft)[0],
                    "problem": "invented",
                }
            )
        if fault in ("minor", "stubborn"):
            findings.append(
                {
                    "section": first,
                    "kind": "fluency",
                    "severity": "minor" if fault == "minor" else "blocker",
                    "english": _sentences(english)[0],
                    "translation": _sentences(draft)[0],
                    "problem": "reads a little stiffly",
                }
            )
            if fault == "stubborn":
                with self._lock:
                    self._review_faults[(lang, path)].insert(0, "stubborn")
        return findings


def serve(latency: float) -> None:
    """Serve the echo translator until interrupted (for local simulations)."""
    server = FakeOpenAIServer()
    server.start()
    EchoTranslator(latency=latency).install(server)
    print(f"OPENAI_BASE_URL={server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Serve the echo translation model.")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call")
    args = parser.parse_args()
    serve(args.latency)
