"""The OpenAI Agents SDK's `agents.extensions` names, under turnstore.

Code moving from the SDK changes `agents.extensions` to `turnstore.extensions` in its imports:
[`ToolOutputTrimmer`][turnstore.extensions.ToolOutputTrimmer] here, the extension sessions in
`turnstore.extensions.memory`.
"""

from __future__ import annotations

from .tool_output_trimmer import ToolOutputTrimmer

__all__ = ["ToolOutputTrimmer"]
