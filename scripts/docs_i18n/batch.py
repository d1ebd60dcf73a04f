"""Full retranslations at half price through the OpenAI Batch API (`--batch`, `--batch-collect`).

`submit` plans the run as usual but records each job's first request (the draft of its changed
sections) instead of sending it, uploads them as one JSONL file (`POST /v1/files`, purpose
`batch`) and creates a batch on `/v1/responses` with a 24-hour window (`POST /v1/batches`).
The batch's id and the ids of its requests are kept in `i18n/batch.json`; nothing else is
written, except what a run writes without the model (moves, removals, front-matter rewrites).

`collect` reads that file, asks for the batch (`GET /v1/batches/{id}`) and, once it has ended,
downloads its output and error files and runs as usual: a request whose reply came back in the
batch is answered from it, everything else (a review, a repair, an item that expired or
failed, a page whose English changed since) is sent directly. So a batch reply goes through
the same code checks, review, repairs and two-phase manifest writes as any reply.

A request's `custom_id` is a hash of its whole body (`translator.request_id`): a reply is used
only for exactly the request the run would send now.
"""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from .atomic import atomic_write_text, remove_file
from .manifest import locked
from .planning import Options
from .report import Reporter
from .runner import translate
from .translator import ReplyBook

__all__ = ["PENDING", "BatchState", "collect", "submit"]

PENDING = 3
"""The exit code of `--batch-collect` while the batch is still running."""

_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})


@dataclass
class BatchState:
    """What `i18n/batch.json` keeps between `--batch` and `--batch-collect`.

    Attributes:
        batch: The batch's id.
        input_file: The id of the uploaded requests file.
        created: When the batch was created (UTC, ISO 8601).
        requests: Request id -> the translation(s) it drafts ("ja/index.md", "ja+ko/index.md").
    """

    batch: str
    input_file: str
    created: str
    requests: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def path(options: Options) -> Path:
        """The state file of `options`' repository."""
        return options.root / "i18n" / "batch.json"

    @classmethod
    def load(cls, options: Options) -> BatchState | None:
        """Read the state file; `None` when there is none.

        Raises:
            ValueError: The file is not a batch state written by `submit`.
        """
        path = cls.path(options)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON ({exc}): delete it to start again") from exc
        ok = (
            isinstance(data, dict)
            and all(isinstance(data.get(k), str) for k in ("batch", "input_file", "created"))
            and isinstance(data.get("requests"), dict)
            and all(isinstance(v, str) for v in data["requests"].values())
        )
        if not ok:
            raise ValueError(
                f"{path} is not a batch state (batch, input_file, created, requests): "
                "delete it to start again"
            )
        return cls(data["batch"], data["input_file"], data["created"], dict(data["requests"]))

    def save(self, options: Options) -> None:
        """Write the state file atomically."""
        data = {
            "batch": self.batch,
            "input_file": self.input_file,
            "created": self.created,
            "requests": self.requests,
        }
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(self.path(options), text)


async def submit(options: Options, client: openai.AsyncOpenAI, reporter: Reporter) -> int:
    """Plan a run, put each job's first request in a batch, and record it in `i18n/batch.json`.

    Returns:
        0 (also when nothing needs the model: then no batch is created), or 1 when a job
        failed before its request (as in a normal run).

    Raises:
        ValueError: A batch is already waiting to be collected, or bad input as in a run.
        openai.OpenAIError: The upload or the batch creation failed (nothing was recorded).
    """
    pending = await asyncio.to_thread(BatchState.load, options)
    if pending is not None:
        raise ValueError(
            f"batch {pending.batch} (created {pending.created}) is not collected yet: run "
            f"--batch-collect first, or delete {BatchState.path(options)} to abandon it"
        )
    book = ReplyBook()
    code = await translate(replace(options, replies=book), client, reporter)
    if not book.requests:
        reporter.note("no request needs the model: no batch created")
        return code
    lines = [
        json.dumps(
            {"custom_id": key, "method": "POST", "url": "/v1/responses", "body": body},
            ensure_ascii=False,
        )
        for key, body in book.requests.items()
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    uploaded = await client.files.create(
        file=("translate_docs_batch.jsonl", io.BytesIO(data)), purpose="batch"
    )
    batch = await client.batches.create(
        input_file_id=uploaded.id,
        endpoint="/v1/responses",
        completion_window="24h",
        metadata={"created_by": "translate_docs.py"},
    )
    queued = reporter.totals.queued_requests
    state = BatchState(
        batch=batch.id,
        input_file=uploaded.id,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        requests={key: "+".join(queued.get(key, [])) for key in book.requests},
    )
    await asyncio.to_thread(_locked_save, options, state)
    reporter.note(
        f"batch {batch.id}: {len(lines)} request(s) sent at the Batch API's price; "
        "run --batch-collect once it has ended (within 24 h)"
    )
    return code


def _replies(text: str) -> tuple[dict[str, str], list[str]]:
    """The response bodies of a batch output file by request id, and the ids that failed."""
    replies: dict[str, str] = {}
    failed: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
            continue
        response = item.get("response")
        if (
            isinstance(response, dict)
            and response.get("status_code") == 200
            and isinstance(response.get("body"), dict)
        ):
            replies[item["custom_id"]] = json.dumps(response["body"])
        else:
            failed.append(item["custom_id"])
    return replies, failed


async def collect(options: Options, client: openai.AsyncOpenAI, reporter: Reporter) -> int:
    """Write the translations of an ended batch through the usual checks, review and manifest.

    Returns:
        The run's exit code (0, or 1 when a page failed), or `PENDING` while the batch runs.

    Raises:
        ValueError: No batch is waiting (`i18n/batch.json` is missing) or the file is malformed.
        openai.OpenAIError: The batch or its files could not be read (the state is kept).
    """
    state = await asyncio.to_thread(BatchState.load, options)
    if state is None:
        raise ValueError(f"no batch to collect ({BatchState.path(options)} does not exist)")
    batch = await client.batches.retrieve(state.batch)
    counts = batch.request_counts
    done = f"{counts.completed + counts.failed}/{counts.total} done" if counts else "no counts"
    if batch.status not in _ENDED:
        reporter.note(
            f"batch {batch.id} is {batch.status} ({done}); run --batch-collect again later"
        )
        return PENDING
    replies: dict[str, str] = {}
    failed: list[str] = []
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            content = await client.files.content(file_id)
            got, bad = _replies(content.text)
            replies.update(got)
            failed += bad
    missing = [key for key in state.requests if key not in replies]
    reporter.note(
        f"batch {batch.id} {batch.status}: {len(replies)} of {len(state.requests)} "
        f"request(s) answered; {len(missing)} sent directly instead"
        + (f" ({len(failed)} failed in the batch)" if failed else "")
    )
    book = ReplyBook(replies)
    code = await translate(replace(options, replies=book), client, reporter)
    unused = sorted(set(replies) - book.used)
    if unused:
        reporter.note(
            f"{len(unused)} batch reply(ies) not used: their page or the prompts changed since "
            "--batch, and they were translated directly"
        )
    await asyncio.to_thread(_locked_save, options, None)
    return code


def _locked_save(options: Options, state: BatchState | None) -> None:
    """Write the batch state (or remove it, for `None`) under the manifest's lock."""
    with locked(options.manifest_path):
        if state is not None:
            state.save(options)
        else:  # remove_file ignores a file already gone
            remove_file(BatchState.path(options), stop_at=options.root / "i18n")
