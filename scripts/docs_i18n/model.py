"""Translating one section with the model: the request, the checks, one repair, the review.

One request per changed section and language: the common prompt and the language's rules
(docs/i18n/prompts/), the glossary entries the section uses, the English section with its code
masked, and the current translation of the section as the text to keep. The draft is checked
by code; with `review`, a separate call lists meaning problems with literal quotes (those whose
quotes are not in the texts are dropped). The findings go back in one repair request; a section
that still fails is returned with its findings and not written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import openai

from .checks import check_section
from .glossary import Glossary
from .pages import Masked, anchor_ids, mask

__all__ = ["LANGUAGES", "Result", "Translator", "pin_ids"]

LANGUAGES = {"ja": "Japanese", "ko": "Korean", "zh": "Simplified Chinese"}
_REVIEW_SCHEMA = {
    "type": "object",
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "english": {"type": "string"},
                    "translation": {"type": "string"},
                    "problem": {"type": "string"},
                },
                "required": ["english", "translation", "problem"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["findings"],
    "additionalProperties": False,
}


@dataclass
class Result:
    """A translated section (`text`), or the findings that kept it from being written."""

    text: str | None
    findings: list[tuple[int, str]] = field(default_factory=list)
    calls: int = 0


def pin_ids(english: str, translation: str) -> str:
    """Give each heading of `translation` the id of the English heading at its place."""
    ids = [ident for _, _, ident in anchor_ids(english)]
    headings = anchor_ids(translation)
    if len(ids) != len(headings):
        return translation
    lines = translation.split("\n")
    for (index, title, _), ident in zip(headings, ids, strict=False):
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        lines[index] = f"{indent}{title} {{#{ident}}}"
    return "\n".join(lines)


class Translator:
    """Sends section requests for one run (a model, a client, the prompt files, a glossary)."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        prompts: Path,
        glossary: Glossary,
        *,
        review: bool = False,
    ) -> None:
        self.client, self.model, self.glossary, self.review = client, model, glossary, review
        self.common = Template((prompts / "common.md").read_text(encoding="utf-8"))
        self.review_prompt = Template((prompts / "review.md").read_text(encoding="utf-8"))
        self.rules = {
            lang: (prompts / f"{lang}.md").read_text(encoding="utf-8").strip() for lang in LANGUAGES
        }

    def instructions(self, english: str, lang: str) -> str:
        """The system prompt of a request for `english` in `lang`."""
        names = self.glossary.names_in(english)
        terms = [
            f"- {term}: {self.glossary.terms[lang][term]}"
            for term in self.glossary.terms_in(english, lang)
        ]
        return self.common.safe_substitute(
            language=LANGUAGES[lang],
            language_rules=self.rules[lang],
            do_not_translate="\n".join(f"- {name}" for name in names) or "(none in this section)",
            terms="\n".join(terms) or "(none in this section)",
        )

    async def _ask(self, instructions: str, request: str, **extra: Any) -> str:
        """One request; an incomplete or failed reply raises `RuntimeError`."""
        try:
            response = await self.client.responses.create(
                model=self.model, instructions=instructions, input=request, **extra
            )
        except openai.OpenAIError as exc:
            raise RuntimeError(f"the API call failed: {exc}") from exc
        if response.status != "completed":
            reason = getattr(response.incomplete_details, "reason", None) or response.status
            raise RuntimeError(f"the model's reply is incomplete ({reason}): nothing written")
        return response.output_text

    async def translate(self, page: str, english: str, keep: str | None, lang: str) -> Result:
        """Translate one English section into `lang`, keeping what `keep` says still holds."""
        source = mask(english)
        request = f"Translate this section of `docs/{page}` into {LANGUAGES[lang]}.\n\n"
        request += f"<source>\n{source.text.strip()}\n</source>\n"
        if keep:
            kept = _mask_like(keep, source)
            request += f"\n<current-translation>\n{kept.strip()}\n</current-translation>\n"
        instructions = self.instructions(english, lang)
        result = Result(None)
        draft: str | None = None
        findings: list[tuple[int, str]] = []
        for attempt in range(2):
            text = request
            if attempt:
                if draft is not None:
                    text += f"\n<draft>\n{draft}\n</draft>\n"
                text += "\nThe draft has these problems; return the whole section, corrected:\n"
                text += "\n".join(f"- line {line + 1}: {message}" for line, message in findings)
            result.calls += 1
            try:
                draft = (await self._ask(instructions, text)).strip("\n")
            except RuntimeError as exc:
                draft, findings = None, [(0, str(exc))]
                continue
            translation, findings = self._restore(english, draft, source, lang)
            if self.review and not attempt and not findings:
                result.calls += 1
                findings = await self._review(english, translation or "", lang)
            if not findings and translation is not None:
                result.text = translation
                return result
        result.findings = findings
        return result

    def _restore(
        self, english: str, draft: str, source: Masked, lang: str
    ) -> tuple[str | None, list[tuple[int, str]]]:
        """The draft with its code back and the English heading ids, and its findings."""
        found = re.findall(r"@@([BC])(\d+)@@", draft)
        wrong = [f"@@{k}{n}@@" for k, n in found if int(n) >= len(source.codes)]
        missing = sorted(
            set(re.findall(r"@@[BC]\d+@@", source.text)) - {f"@@{k}{n}@@" for k, n in found}
        )
        if wrong or missing:
            return None, [(0, f"placeholders missing {missing} or unknown {wrong}")]
        trailing = english[len(english.rstrip("\n")) :]
        translation = pin_ids(english, source.restore(draft)).rstrip("\n") + trailing
        findings = check_section(english, translation, lang, self.glossary)
        return translation, [(f.line, f.message) for f in findings]

    async def _review(self, english: str, translation: str, lang: str) -> list[tuple[int, str]]:
        """A reviewer's findings whose quotes occur in the English and in the translation."""
        terms = [
            f"- {term}: {self.glossary.terms[lang][term]}"
            for term in self.glossary.terms_in(english, lang)
        ]
        text = f"<english>\n{english}\n</english>\n<translation>\n{translation}\n</translation>"
        fmt = {"type": "json_schema", "name": "review", "schema": _REVIEW_SCHEMA, "strict": True}
        try:
            reply = await self._ask(
                self.review_prompt.safe_substitute(
                    language=LANGUAGES[lang], terms="\n".join(terms) or "(none)"
                ),
                text,
                text={"format": fmt},
            )
            items = json.loads(reply)["findings"]
        except (RuntimeError, ValueError, KeyError):
            return []  # a review that fails is no finding: the code checks passed
        flat = " ".join(translation.split())
        return [
            (0, f"review: {item['problem']} (English: {item['english']!r})")
            for item in items
            if isinstance(item, dict)
            and " ".join(str(item.get("english", "")).split()) in " ".join(english.split())
            and " ".join(str(item.get("translation", "")).split()) in flat
            and item.get("english")
            and item.get("translation")
        ]


def _mask_like(translation: str, source: Masked) -> str:
    """Mask `translation` with the English placeholders where its code is the English code."""
    masked = mask(translation)
    free: dict[str, list[int]] = {}
    for index, code in enumerate(source.codes):
        free.setdefault(code, []).append(index)

    def swap(match: re.Match[str]) -> str:
        code = masked.codes[int(match.group(2))]
        if free.get(code):
            return f"@@{match.group(1)}{free[code].pop(0)}@@"
        return code if match.group(1) == "C" else "\n" + code + "\n"

    return re.sub(r"@@([BC])(\d+)@@", swap, masked.text)
