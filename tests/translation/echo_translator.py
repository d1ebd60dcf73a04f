"""A deterministic stand-in for the translation model, served by the fake OpenAI server.

`EchoTranslator` answers `POST /v1/responses` like a translator that follows the rules: it
reads the sections between `<source>` and `</source>` in the first user message and returns
them with their markers, prose "translated" by a fixed word list and a language tag on every
heading, leaving placeholders, link targets and HTML untouched. Faults can be queued per page
to play a model that breaks things.

Run it as a server for local simulations of the CI job:

    python tests/translation/echo_translator.py [--latency 0]

It prints `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1` (a free port); point the script at it with
that variable and any OPENAI_API_KEY.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from turnstore.testing import FakeOpenAIServer, FakeReply, RecordedRequest, text_response

__all__ = ["FAULTS", "EchoTranslator", "echo_translate", "serve"]

_WORDS: dict[str, dict[str, str]] = {
    "ja": {
        "session": "セッション",
        "sessions": "セッション",
        "agent": "エージェント",
        "the": "その",
    },
    "ko": {"session": "세션", "sessions": "세션들", "agent": "에이전트", "the": "그"},
    "zh": {"session": "会话", "sessions": "会话", "agent": "智能体", "the": "这个"},
}
_TAGS = {"ja": "（訳）", "ko": "(번역)", "zh": "（译）"}
_LANG_BY_NAME = {"Japanese": "ja", "Korean": "ko", "Simplified Chinese": "zh"}
_PROTECTED = re.compile(
    r"(\[[^\]\[]*\]\[\]|\]\([^)]*\)|\]\[[^\]]*\]|<[^>]*>|@@\w+@@|\{[^}]*\}|https?://\S+"
    r"|^\s*\[[^\]]*\]:.*$)"
)
_HEADING = re.compile(r"^( {0,3}#{1,6} )(.*)$")


def _translate_text(text: str, lang: str) -> str:
    parts = _PROTECTED.split(text)
    words = _WORDS[lang]
    for index in range(0, len(parts), 2):
        parts[index] = re.sub(
            r"[A-Za-z]+",
            lambda m: words.get(m.group(0).lower(), m.group(0)),
            parts[index],
        )
    return "".join(parts)


def echo_translate(source: str, lang: str) -> str:
    """Translate the `<source>` block's content the way a well-behaved model would."""
    out = []
    for line in source.splitlines(keepends=True):
        if line.startswith("<!-- i18n:section"):
            out.append(line)
            continue
        heading = _HEADING.match(line.rstrip("\n"))
        if heading:
            newline = line[len(line.rstrip("\n")) :]
            out.append(f"{heading[1]}{_translate_text(heading[2], lang)} {_TAGS[lang]}{newline}")
            continue
        out.append(_translate_text(line, lang))
    return "".join(out)


def _drop_code(text: str) -> str:
    return re.sub(r"(?m)^[ \t]*@@BLOCK_\d+@@\n", "", text, count=1)


def _change_link(text: str) -> str:
    return re.sub(r"\]\(([^)]*)\)", r"](changed-\1)", text, count=1)


def _lose_heading(text: str) -> str:
    return re.sub(r"(?m)^#{2,6} .*\n", "", text, count=1)


def _garbage(text: str) -> str:
    return "I'm sorry, but I can only help with translations of complete documents."


FAULTS = {
    "drop_code": _drop_code,
    "change_link": _change_link,
    "lose_heading": _lose_heading,
    "garbage": _garbage,
}
"""Named ways to break a draft."""


class EchoTranslator:
    """A route handler for `FakeOpenAIServer` that plays a translation model.

    Args:
        latency: Seconds to wait before each answer.

    Attributes:
        calls: The requests answered, as (language, page, section numbers) tuples.
        max_in_flight: The most requests being answered at the same time.
    """

    def __init__(self, *, latency: float = 0.0) -> None:
        self.latency = latency
        self.calls: list[tuple[str, str, list[int]]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._faults: dict[tuple[str, str], list[str | FakeReply]] = defaultdict(list)
        self._lock = threading.Lock()

    def fault(self, lang: str, page: str, *faults: str | FakeReply) -> None:
        """Queue faults for the next calls about `page` in `lang`.

        Each fault is a name from `FAULTS` (the draft is broken that way) or a `FakeReply`
        (sent as is: an HTTP error, a delay that provokes a timeout, ...).
        """
        with self._lock:
            self._faults[(lang, page)].extend(faults)

    def install(self, server: FakeOpenAIServer) -> EchoTranslator:
        """Answer `POST /v1/responses` on `server` (a started one); returns `self`."""
        server.route("POST", "/v1/responses", self)
        return self

    def __call__(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        body = request.body if isinstance(request.body, dict) else {}
        messages = body.get("input") or []
        first = messages[0]["content"] if messages and isinstance(messages[0], dict) else ""
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
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.latency)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(fault, FakeReply):
            return fault
        text = echo_translate(source, lang)
        if fault is not None:
            text = FAULTS[fault](text)
        return text_response(
            text, input_tokens=len(first) // 4 + 1000, output_tokens=len(text) // 2 + 500
        )


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
