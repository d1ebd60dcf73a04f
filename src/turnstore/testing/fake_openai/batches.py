"""The Files and Batches endpoints of the fake OpenAI server, for code that uses the Batch API.

`FakeBatches().install(server)` answers `POST /v1/files` (a multipart upload), `GET
/v1/files/{id}/content`, `POST /v1/batches` and `GET /v1/batches/{id}` like the API. Each line
of a batch's input file is answered by the server's own routes (`FakeOpenAIServer.answer`), as
the same request sent directly would be, without being recorded as a direct request. Replies
with status 200 go to the batch's output file, others to its error file, in the API's line
format (`custom_id`, `response.status_code`, `response.body`).

A batch ends as soon as it is created, unless told otherwise:

- `hold = True` keeps new batches `in_progress` until `finish(batch_id)`;
- `expire_after = n` answers only the first `n` lines, and the batch ends `expired` (the rest
  are in the error file with the code `batch_expired`, as the API reports them);
- `fail = True` ends new batches `failed`, with no output at all (a rejected input file).

Example:
    ```python
    batches = FakeBatches().install(server)
    batches.hold = True
    ...  # the code under test creates a batch
    batches.finish(batches.ids()[0])
    ```
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import FakeOpenAIServer, FakeReply, RecordedRequest

__all__ = ["FakeBatches"]

_ids = itertools.count(1)


def _error(status: int, message: str) -> FakeReply:
    return FakeReply(
        status=status, body={"error": {"message": message, "type": "invalid_request_error"}}
    )


def _form_file(request: RecordedRequest) -> tuple[str, bytes, dict[str, str]] | None:
    """The uploaded file (name, bytes) and the other form fields of a multipart request."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.raw)
    upload: tuple[str, bytes] | None = None
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if part.get_filename():
            upload = (str(part.get_filename()), payload)
        else:
            fields[name] = payload.decode()
    if upload is None:
        return None
    return upload[0], upload[1], fields


@dataclass
class _Batch:
    data: dict[str, Any]
    lines: list[dict[str, Any]] = field(default_factory=list)


class FakeBatches:
    """Files and Batches endpoints for a `FakeOpenAIServer` (see the module docstring).

    Attributes:
        hold: Keep new batches `in_progress` until `finish` is called.
        expire_after: Answer only this many lines of a batch, which then ends `expired`.
        fail: End new batches `failed` without running any line.
        files: The stored files' bytes, by file id.
    """

    def __init__(self) -> None:
        self.hold = False
        self.expire_after: int | None = None
        self.fail = False
        self.files: dict[str, bytes] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._batches: dict[str, _Batch] = {}
        self._lock = threading.Lock()
        self._server: FakeOpenAIServer | None = None

    def install(self, server: FakeOpenAIServer) -> FakeBatches:
        """Add the routes to `server` and return `self`."""
        self._server = server
        server.route("POST", "/v1/files", self._upload)
        server.route("GET", "/v1/files/", self._content)
        server.route("POST", "/v1/batches", self._create)
        server.route("GET", "/v1/batches/", self._retrieve)
        return self

    def ids(self) -> list[str]:
        """The ids of the batches created so far, oldest first."""
        with self._lock:
            return list(self._batches)

    def batch(self, batch_id: str) -> dict[str, Any]:
        """The batch object as `GET /v1/batches/{id}` returns it."""
        with self._lock:
            return json.loads(json.dumps(self._batches[batch_id].data))  # type: ignore[no-any-return]

    def input_lines(self, batch_id: str) -> list[dict[str, Any]]:
        """The lines of a batch's input file."""
        with self._lock:
            return list(self._batches[batch_id].lines)

    def finish(self, batch_id: str) -> None:
        """Run a held batch's lines now (with `expire_after` and `fail` as they are now)."""
        self._run(batch_id)

    # -- routes --------------------------------------------------------------------------------

    def _store(self, name: str, data: bytes, purpose: str) -> dict[str, Any]:
        file_id = f"file-fake{next(_ids)}"
        meta = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
        }
        with self._lock:
            self.files[file_id] = data
            self._meta[file_id] = meta
        return meta

    def _upload(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        if request.path != "/v1/files":
            return None
        form = _form_file(request)
        if form is None:
            return _error(400, "expected a multipart/form-data upload with a file part")
        name, data, fields = form
        if fields.get("purpose") != "batch":
            return _error(400, f"unsupported purpose {fields.get('purpose')!r} (this fake: batch)")
        return self._store(name, data, "batch")

    def _content(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        parts = request.path.split("/")  # "", "v1", "files", id, "content"
        if len(parts) != 5 or parts[4] != "content":
            return None
        with self._lock:
            data = self.files.get(parts[3])
        if data is None:
            return _error(404, f"no file {parts[3]}")
        return FakeReply(raw=data, content_type="application/octet-stream")

    def _create(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        if request.path != "/v1/batches":
            return None
        body = request.body if isinstance(request.body, dict) else {}
        file_id = body.get("input_file_id")
        with self._lock:
            data = self.files.get(file_id) if isinstance(file_id, str) else None
        if data is None:
            return _error(400, f"no input file {file_id!r}")
        if body.get("endpoint") != "/v1/responses":
            return _error(
                400, f"unsupported endpoint {body.get('endpoint')!r} (this fake: /v1/responses)"
            )
        if body.get("completion_window") != "24h":
            return _error(400, "completion_window must be 24h")
        try:
            lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        except ValueError as exc:
            return _error(400, f"the input file is not JSONL: {exc}")
        ids = [line.get("custom_id") if isinstance(line, dict) else None for line in lines]
        if None in ids or len(set(ids)) != len(ids):
            return _error(400, "every line needs a custom_id, each one different")
        batch_id = f"batch_fake{next(_ids)}"
        batch = _Batch(
            data={
                "id": batch_id,
                "object": "batch",
                "endpoint": "/v1/responses",
                "errors": None,
                "input_file_id": file_id,
                "completion_window": "24h",
                "status": "in_progress",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
            },
            lines=lines,
        )
        with self._lock:
            self._batches[batch_id] = batch
        if not self.hold:
            self._run(batch_id)
        return self.batch(batch_id)

    def _retrieve(self, request: RecordedRequest) -> FakeReply | dict[str, Any] | None:
        batch_id = request.path.removeprefix("/v1/batches/")
        with self._lock:
            known = batch_id in self._batches
        if not known:
            return _error(404, f"no batch {batch_id}")
        return self.batch(batch_id)

    # -- running a batch -----------------------------------------------------------------------

    def _run(self, batch_id: str) -> None:
        assert self._server is not None, "install() first"
        with self._lock:
            batch = self._batches[batch_id]
        if self.fail:
            batch.data.update(status="failed", failed_at=int(time.time()))
            batch.data["errors"] = {"data": [{"code": "invalid_request", "message": "failed"}]}
            return
        output: list[str] = []
        errors: list[str] = []
        expired = False
        for n, line in enumerate(batch.lines):
            custom_id = line["custom_id"]
            if self.expire_after is not None and n >= self.expire_after:
                expired = True
                errors.append(
                    json.dumps(
                        {
                            "id": f"batch_req_fake{next(_ids)}",
                            "custom_id": custom_id,
                            "response": None,
                            "error": {"code": "batch_expired", "message": "not run in time"},
                        }
                    )
                )
                continue
            reply = self._server.answer(
                RecordedRequest(
                    method=str(line.get("method", "POST")),
                    path=str(line.get("url", "")),
                    query={},
                    headers={},
                    body=line.get("body"),
                )
            )
            record = {
                "id": f"batch_req_fake{next(_ids)}",
                "custom_id": custom_id,
                "response": {
                    "status_code": reply.status,
                    "request_id": f"req_fake{next(_ids)}",
                    "body": reply.body
                    if reply.raw is None
                    else reply.raw.decode("utf-8", "replace"),
                },
                "error": None,
            }
            (output if reply.status == 200 else errors).append(json.dumps(record))
        counts = {"total": len(batch.lines), "completed": len(output), "failed": len(errors)}
        ended = "expired" if expired else "completed"
        out_id = (
            self._store("output.jsonl", _jsonl(output), "batch_output")["id"] if output else None
        )
        err_id = (
            self._store("errors.jsonl", _jsonl(errors), "batch_output")["id"] if errors else None
        )
        with self._lock:
            batch.data.update(
                status=ended,
                request_counts=counts,
                output_file_id=out_id,
                error_file_id=err_id,
            )
            batch.data[f"{ended}_at"] = int(time.time())


def _jsonl(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()
