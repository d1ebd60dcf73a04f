"""`python -m turnstore.testing.fake_openai`: the fake OpenAI server, to try turnstore keyless.

```bash
python -m turnstore.testing.fake_openai --port 8787
# export OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=sk-fake
```

Its first line on stdout is a shell command (everything else goes to stderr): run it in the
shell of your code, or there `eval "$(python -m turnstore.testing.fake_openai --print-env
--port 8787)"`, which prints the same line and exits. The server answers the Responses API
(streaming too, keeping each response so `previous_response_id` continues its chain),
`responses/compact` and the Conversations API on 127.0.0.1. Each answer quotes the user
messages the model would see, so a reply shows what history reached it. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

from ..fake_conversations import FakeCompactionAPI, FakeConversationsAPI
from . import FakeOpenAIServer, RecordedRequest, input_items, text_response

__all__ = ["echo_history_reply", "export_line", "main"]

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
    that lists an earlier question proves the history reached the model. The history is what
    the API would feed the model: the `previous_response_id` chain, if any, then the input.

    Args:
        request: The recorded request.

    Returns:
        A response body, or `None` for any other path (so other routes answer it).
    """
    if request.path != "/v1/responses" or not isinstance(request.body, dict):
        return None
    items = [*request.history, *input_items(request.body.get("input"))]
    said = [_text_of(item.get("content")) for item in items if item.get("role") == "user"]
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
    compacted = sum(1 for item in items if item.get("type") == "compaction")
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


def export_line(base_url: str) -> str:
    """The shell command that points the `openai` client at a server on `base_url`.

    Args:
        base_url: The server's base URL, ending in `/v1`.

    Returns:
        One line for `eval` (or to paste):
        `export OPENAI_BASE_URL=http://127.0.0.1:8787/v1 OPENAI_API_KEY=sk-fake`.
    """
    return f"export OPENAI_BASE_URL={shlex.quote(base_url)} OPENAI_API_KEY={shlex.quote(API_KEY)}"


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
    parser.add_argument(
        "--print-env",
        action="store_true",
        help="print the export line for a server on --port and exit, without serving: "
        'eval "$(python -m turnstore.testing.fake_openai --print-env --port 8787)"',
    )
    args = parser.parse_args(argv)
    if args.print_env:
        if not args.port:
            parser.error("--print-env needs the --port of the running server")
        print(export_line(f"http://127.0.0.1:{args.port}/v1"))
        return 0

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
        print(export_line(server.base_url), flush=True)
        print(
            "fake OpenAI server running: run the export line above in the shell that runs "
            f'your code (or there: eval "$(python -m turnstore.testing.fake_openai --print-env '
            f'--port {server.port})"); Ctrl-C stops it',
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
