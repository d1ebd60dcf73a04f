"""Session settings: options that travel with a session and can be overridden per run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "SessionSettings",
    "SessionSettingsLike",
    "coerce_session_settings",
    "default_session_settings",
    "merge_kwargs",
    "resolve_session_limit",
]


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Options for how a session is used by a run.

    A session carries its own settings (`session.session_settings`); a run can overlay another set
    through `RunConfig(session_settings=...)`. Anywhere settings are accepted, a plain dict with the
    same keys is accepted too.

    A run loads the latest items of the history that fit every limit set here (see
    [`load_history`][turnstore.memory.load_history]); the window never starts with a tool output
    whose call was cut off.

    Attributes:
        limit: How many of the latest items to load as history before each run. `None` loads the
            whole history; `0` loads nothing. `session.get_items()` without a limit uses it too.
        limit_turns: How many of the latest turns a run loads. A turn is one user message and
            everything stored up to the next user message. Items stored before the first user
            message belong to no turn and are loaded only when the whole history fits. `None`:
            no turn limit.
        limit_tokens: An estimated token budget for the history a run loads: the latest items
            whose estimated tokens add up to at most this many. The estimate is
            [`estimate_item_tokens`][turnstore.memory.estimate_item_tokens]: a quarter of the
            length of each item's JSON, rounded up. `None`: no budget.

    Raises:
        TypeError: A limit is not an int or `None`.
        ValueError: A limit is negative.

    Example:
        ```python
        from turnstore import SessionSettings

        base = SessionSettings(limit=50)
        assert base.resolve({"limit": 10}).limit == 10
        assert base.resolve(SessionSettings()).limit == 50  # None fields do not override

        # The last 5 turns, at most about 8,000 tokens of them.
        fitting = SessionSettings(limit_turns=5, limit_tokens=8_000)
        ```
    """

    limit: int | None = None
    limit_turns: int | None = None
    limit_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("limit", "limit_turns", "limit_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(
                    f"SessionSettings.{name} must be an int or None, "
                    f"not {type(value).__name__}: {value!r}"
                )
            if value is not None and value < 0:
                raise ValueError(f"SessionSettings.{name} must be >= 0 or None, got {value}")

    @property
    def fits_by_items_only(self) -> bool:
        """Whether only `limit` (or nothing) bounds the history: no turn or token limit."""
        return self.limit_turns is None and self.limit_tokens is None

    def resolve(self, override: SessionSettingsLike | None) -> SessionSettings:
        """Return these settings with the override's non-None fields laid on top.

        Args:
            override: Settings (or a dict of them) whose fields win where they are not `None`.

        Returns:
            A new `SessionSettings`; `self` is not changed.

        Raises:
            TypeError: The override is not settings or a dict, or names an unknown field.
        """
        other = coerce_session_settings(override)
        if other is None:
            return self
        changes = {k: v for k, v in other.to_dict().items() if v is not None}
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as a plain dict, one key per field."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


SessionSettingsLike: TypeAlias = SessionSettings | Mapping[str, Any]
"""What a `session_settings` argument accepts: `SessionSettings`, or a mapping with its keys.

For example `SessionSettings(limit=20)` or `{"limit": 20}`. For your own annotations, import it
from `turnstore.memory`.
"""


def coerce_session_settings(value: SessionSettingsLike | None) -> SessionSettings | None:
    """Turn settings given as a dict (or another library's settings object) into ours.

    Args:
        value: `SessionSettings`, a mapping of its fields, `None`, or a settings object of
            another library with the same fields and a `to_dict()` method (such as the OpenAI
            Agents SDK's `SessionSettings`, so that its `RunConfig` works with our sessions).

    Returns:
        The settings, or `None` when `value` is `None`.

    Raises:
        TypeError: `value` is of another type, or has a key that is not a field (the message
            names the key).
        ValueError: A field has an invalid value (for example a negative limit).
    """
    if value is None or isinstance(value, SessionSettings):
        return value
    if not isinstance(value, Mapping):
        to_dict = getattr(value, "to_dict", None)
        as_dict = to_dict() if callable(to_dict) else None
        if not isinstance(as_dict, Mapping):
            raise TypeError(
                "session settings must be SessionSettings, a dict or None, "
                f"not {type(value).__name__}"
            )
        value = as_dict
    known = {field.name for field in dataclasses.fields(SessionSettings)}
    unknown = [str(key) for key in value if key not in known]
    if unknown:
        raise TypeError(
            f"Unknown session settings: {', '.join(unknown)} "
            f"(known settings: {', '.join(sorted(known))})"
        )
    return SessionSettings(**dict(value))


def default_session_settings(value: SessionSettingsLike | None) -> SessionSettings:
    """Coerce a session constructor's `session_settings`, `None` meaning empty settings.

    Args:
        value: What the caller passed (settings, a dict, or `None`).

    Returns:
        The settings; `SessionSettings()` when `value` is `None`, as in the OpenAI Agents SDK.

    Raises:
        TypeError: `value` is of another type, or names an unknown setting.
        ValueError: A field has an invalid value.
    """
    resolved = coerce_session_settings(value)
    return SessionSettings() if resolved is None else resolved


def resolve_session_limit(explicit: int | None, settings: SessionSettingsLike | None) -> int | None:
    """Pick the history limit for one read.

    Args:
        explicit: A limit passed by the caller; it wins when not `None`.
        settings: The session's settings, consulted when `explicit` is `None`.

    Returns:
        `explicit` if given, else `settings.limit`, else `None` (everything).
    """
    if explicit is not None:
        return explicit
    resolved = coerce_session_settings(settings)
    return None if resolved is None else resolved.limit


def merge_kwargs(
    as_dict: Mapping[str, Any] | None, as_keywords: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge options given as one dict with options given as keywords.

    The OpenAI Agents SDK passes engine or client options as one dict (`engine_kwargs=`,
    `redis_kwargs=`); ours are keywords. Both forms work, together too.

    Args:
        as_dict: The dict form, or `None`.
        as_keywords: The keyword form.

    Returns:
        One dict with both.

    Raises:
        TypeError: `as_dict` is not a mapping, or a key is given both ways.
    """
    if as_dict is None:
        return dict(as_keywords)
    if not isinstance(as_dict, Mapping):
        raise TypeError(f"the options dict must be a dict, not {type(as_dict).__name__}")
    both = sorted(set(as_dict) & set(as_keywords))
    if both:
        raise TypeError(f"option {both[0]!r} is given both in the dict and as a keyword")
    return {**as_dict, **as_keywords}
