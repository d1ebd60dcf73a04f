"""The exceptions that turnstore raises.

Every error the package raises on purpose derives from
[`TurnstoreError`][turnstore.TurnstoreError], so `except TurnstoreError` catches
all of them. The tree:

```text
TurnstoreError
├── SessionError                  a session could not do what was asked
│   ├── SessionClosedError        the session (or its database) was closed
│   ├── SessionStorageError       the storage backend failed (a driver error is chained)
│   ├── SessionSchemaError        the stored data has a layout this release cannot use
│   ├── SessionDecryptionError    stored items cannot be decrypted with the keys given
│   └── BranchDeletedError        the current branch was deleted by another session object
├── UserError                     the caller passed something that cannot work (bad options)
└── AgentsError                   a run did not finish
    ├── MaxTurnsExceeded          the agent used up `max_turns` without a final answer
    ├── ModelBehaviorError        the model returned something the runner cannot use
    └── ModelCallError            the call to the model's API failed (the client's error is chained)
```

Input that has the wrong type or value raises the standard `TypeError` or `ValueError`, with a
message that names the offending argument or item.
"""

from __future__ import annotations

__all__ = [
    "AgentsError",
    "BranchDeletedError",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "ModelCallError",
    "SessionClosedError",
    "SessionDecryptionError",
    "SessionError",
    "SessionSchemaError",
    "SessionStorageError",
    "TurnstoreError",
    "UserError",
]


class TurnstoreError(Exception):
    """Base class of every exception that turnstore raises on purpose."""


class SessionError(TurnstoreError):
    """A session could not carry out the requested operation."""


class SessionClosedError(SessionError, RuntimeError):
    """The session, or the database it uses, was closed before the operation.

    Also a `RuntimeError`, which is what the OpenAI Agents SDK's sessions raise then.
    """


class SessionStorageError(SessionError):
    """The storage backend failed; the driver's own exception is chained as `__cause__`."""


class SessionSchemaError(SessionError):
    """The stored data has a layout this release cannot use.

    It was written by a newer release, is not a session schema, holds branches written by the
    OpenAI Agents SDK's `AdvancedSQLiteSession`, or has table names that collide. The message
    says which.
    """


class SessionDecryptionError(SessionError):
    """Stored items cannot be decrypted with the keys given (a wrong key, or a damaged item).

    Nothing was changed.
    """


class BranchDeletedError(SessionError, ValueError):
    """The current branch of an `AdvancedSQLiteSession` was deleted by another session object.

    Nothing was read or written. Also a `ValueError`, which the OpenAI Agents SDK raises for a
    branch that does not exist.
    """


class UserError(TurnstoreError):
    """The caller combined options that cannot work together, or passed an unusable object."""


class AgentsError(TurnstoreError):
    """The base of the errors of a run: `MaxTurnsExceeded`, `ModelBehaviorError`, `ModelCallError`.

    Catch it when the run did not finish. A [`SessionError`][turnstore.SessionError] is not one:
    it passes through. The name follows the OpenAI Agents SDK's `AgentsException`.

    Example:
        ```python
        try:
            result = await Runner.run(agent, "Hi", session=session)
        except AgentsError as exc:  # the run failed; session errors pass through
            print(f"the run did not finish: {exc}")
        ```
    """


class MaxTurnsExceeded(AgentsError):
    """The agent used up its `max_turns` without producing a final answer."""


class ModelBehaviorError(AgentsError):
    """The model returned output the runner cannot use (for example, a call to an unknown tool)."""


class ModelCallError(AgentsError):
    """The call to the model's API failed; the client's own exception is chained as `__cause__`."""
