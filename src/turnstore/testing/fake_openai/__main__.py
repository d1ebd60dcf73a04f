"""`python -m turnstore.testing.fake_openai`: the fake OpenAI server, to try turnstore keyless.

```bash
python -m turnstore.testing.fake_openai --port 8787
# OPENAI_BASE_URL=http://127.0.0.1:8787/v1
# OPENAI_API_KEY=sk-fake
```

Export the two printed lines in another shell and run any example: the server answers the
Responses API (streaming too), `responses/compact` and the Conversations API on 127.0.0.1. Each
answer quotes the user messages the request carried, so a reply shows what history reached the
model. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

from ..fake_conversations import FakeCompactionAPI, FakeConversationsAPI
from . import FakeOpenAIServer, RecordedRequest, text_response

__all__ = ["echo_history_reply", "main"]

API_KEY = "sk-fake"
"""The key the server prints: any value works, the server checks none."""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""


def echo_history_reply(request: RecordedRequest) -> dict[str, Any] | None:
    """Answer `POST /v1/responses` by quoting the user messages the request carried.

    The newest user message is quoted first, then the earlier ones, oldest first: a reply
    that lists an earlier question proves the history reached the model.

    Args:
        request: The recorded request.

    Returns:
        A response body, or `None` for any other path (so other routes answer it).
    """
    if request.path != "/v1/responses" or not isinstance(request.body, dict):
        return None
    items = request.body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    said = [
        _text_of(item.get("content"))
        for item in items or []
        if isinstance(item, dict) and item.get("role") == "user"
    ]
    said = [text for text in said if text]
    if not said:
        reply = "(fake model) I received no user message."
    elif len(said) == 1:
        reply = f'(fake model) You said "{said[-1]}". This is the first message I see.'
    else:
        earlier = "; ".join(f'"{text}"' for text in said[:-1])
        count = len(said) - 1
        noun = "message" if count == 1 else "messages"
        reply = f'(fake model) You said "{said[-1]}". Your earlier {noun}: {earlier}.'
    compacted = sum(
        1 for item in items or [] if isinstance(item, dict) and item.get("type") == "compaction"
    )
    if compacted:
        reply += f" Earlier turns reached me compacted ({compacted} compaction item)."
    return text_response(reply, model=str(request.body.get("model") or "o3"))


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C (or SIGTERM).

    Args:
        argv: The arguments (default: `sys.argv[1:]`).

    Returns:
        0 after a clean stop, 1 when the port cannot be listened on.
    """
    parser = argparse.ArgumentParser(
        prog="python -m turnstore.testing.fake_openai",
        description="A fake OpenAI API on 127.0.0.1: Responses (streaming too), "
        "responses/compact and Conversations. Replies quote the user messages they received.",
    )
    parser.add_argument(
        "--port", type=_port, default=0, help="the TCP port on 127.0.0.1 (default: a free port)"
    )
    args = parser.parse_args(argv)

    server = FakeOpenAIServer(port=args.port)
    FakeCompactionAPI().install(server)
    FakeConversationsAPI().install(server)
    server.route("POST", "/v1/responses", echo_history_reply)
    try:
        server.start()
    except OSError as exc:
        print(
            f"fake_openai: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}; "
            "choose another --port, or leave it out for a free one",
            file=sys.stderr,
        )
        return 1

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        print(f"OPENAI_BASE_URL={server.base_url}")
        print(f"OPENAI_API_KEY={API_KEY}", flush=True)
        print(
            "fake OpenAI server running: export the two lines above in the shell that runs "
            "your code (or examples/*.py); Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    print("fake OpenAI server stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    # Ctrl-C stops the server even when it was started from a process that ignores SIGINT (a
    # shell job started with `&` passes SIG_IGN on, and Python keeps an inherited SIG_IGN).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
