"""Defaults shared by the agent layer and `memory/` (which must not import the agent layer)."""

from __future__ import annotations

import os

__all__ = ["DEFAULT_MODEL", "default_model_name"]

DEFAULT_MODEL = "gpt-5.6-luna"
"""The model an agent uses when it names none and `OPENAI_DEFAULT_MODEL` is not set: a current
general model, the same default as the OpenAI Agents SDK's."""


def default_model_name() -> str:
    """Return `$OPENAI_DEFAULT_MODEL` if it is set, else `DEFAULT_MODEL` (`"gpt-5.6-luna"`)."""
    return os.environ.get("OPENAI_DEFAULT_MODEL") or DEFAULT_MODEL
