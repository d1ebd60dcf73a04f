"""A deterministic stand-in for the translation model, served by the fake OpenAI server.

`EchoTranslator(pairs).install(server)` answers `POST /v1/responses`:

- a translation request whose `<source>` is a known English section (from the fixture pairs)
  gets that section's fixture translation;
- any other section is "translated" by rule: each glossary term of the request's term list by
  its rendering, each line of prose tagged with a word of the language; placeholders, links,
  numbers and markup stay as they are;
- a review request (a JSON schema reply) gets `review_findings`, or an empty list.

`faults` (functions of the draft, used one per call, in order) play a model that breaks
things. Run it alone for local simulations of the CI job:
`python tests/translation/echo_translator.py` prints `OPENAI_BASE_URL=...`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from turnstore.testing import FakeOpenAIServer, RecordedRequest, text_response

TAGS = {"Japanese": "訳", "Korean": "번역", "Simplified Chinese": "译"}
UNITS = {
    "Japanese": {"seconds": "秒", "second": "秒"},
    "Korean": {"seconds": "초", "second": "초"},
    "Simplified Chinese": {"seconds": "秒", "second": "秒"},
}
_WIDE = dict(zip(",.;:!?", "，。；：！？", strict=False))
_PROSE_LINE = re.compile(
    r"^([ \t]*(?:#{1,6} |[-*+] |\d+[.)] |\| |> )?)(?=\S)"
    r"(?!@@B\d+@@\s*$|!!!|\?\?\?|===|\|?[ \-:|]+$|```|~~~|\[[^\]]+\]:)"
)


def echo(source: str, language: str, terms: dict[str, str]) -> str:
    """The rule translation of a masked English section."""
    out, fenced = [], False
    for line in source.split("\n"):
        if re.match(r"[ \t]*(```|~~~)", line):
            fenced = not fenced
        if fenced or not line.strip() or re.match(r"[ \t]*(```|~~~)", line):
            out.append(line)
            continue
        head = re.match(r"^(#{1,6} .*?)( \{#[^}]+\})?$", line)
        line = head.group(1) if head else line
        for term in sorted(terms, key=len, reverse=True):
            line = re.sub(
                rf"(?<![\w@-]){re.escape(term)}s?(?![\w-])", terms[term], line, flags=re.I
            )
        for word, unit in UNITS[language].items():
            line = re.sub(rf"(?<=\d )\b{word}\b", unit, line)
        if language == "Simplified Chinese":
            line = re.sub(
                r"(?<=[\u4e00-\u9fff])([,.;:!?])(?=\s|$)", lambda m: _WIDE[m.group(1)], line
            )
        out.append(_PROSE_LINE.sub(lambda m: f"{m.group(1)}{TAGS[language]} ", line, count=1))
    return "\n".join(out)


class EchoTranslator:
    """The stand-in model (see the module docstring)."""

    def __init__(self, pairs: dict[str, str] | None = None) -> None:
        self.pairs = {
            " ".join(k.split()): v for k, v in (pairs or {}).items()
        }  # "Language\nsource"
        self.faults: list[Callable[[str], str | dict[str, Any]]] = []
        self.review_findings: list[dict[str, str]] = []
        self.calls = 0
        self._lock = threading.Lock()

    def install(self, server: FakeOpenAIServer) -> EchoTranslator:
        """Answer the server's `POST /v1/responses` requests."""
        server.route("POST", "/v1/responses", self._answer)
        return self

    def _answer(self, request: RecordedRequest) -> dict[str, Any]:
        body = request.body
        with self._lock:
            self.calls += 1
            fault = self.faults.pop(0) if self.faults else None
        language = re.search(r"into (Japanese|Korean|Simplified Chinese)", body["instructions"])
        assert language, "not a translation request"
        if body.get("text", {}).get("format", {}).get("type") == "json_schema":
            return text_response(json.dumps({"findings": self.review_findings}))
        source = re.search(r"<source>\n(.*?)\n</source>", body["input"], re.S)
        assert source, "no <source> in the request"
        terms = dict(
            re.findall(r"^- (.+?): (.+)$", body["instructions"].split("# Terms")[-1], re.M)
        )
        draft = self.pairs.get(" ".join(f"{language.group(1)}\n{source.group(1)}".split()))
        if draft is None:
            draft = echo(source.group(1), language.group(1), terms)
        reply = fault(draft) if fault else draft
        return reply if isinstance(reply, dict) else text_response(reply)


if __name__ == "__main__":
    import time

    with FakeOpenAIServer() as server:
        EchoTranslator().install(server)
        print(f"OPENAI_BASE_URL={server.base_url}", flush=True)
        while True:
            time.sleep(3600)
