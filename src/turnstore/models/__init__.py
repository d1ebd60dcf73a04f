"""Models: the `Model` protocol, its settings, and the OpenAI Responses API implementation."""

from __future__ import annotations

from .interface import Model, ModelRequest
from .openai_responses import OpenAIResponsesModel
from .settings import ModelSettings

__all__ = ["Model", "ModelRequest", "ModelSettings", "OpenAIResponsesModel"]
