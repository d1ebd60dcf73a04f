"""Misuse is a `UserError` that names the problem, not an exception from deep inside."""

from __future__ import annotations

from typing import Any

import pytest

from turnstore import Agent, Runner, UserError, function_tool
from turnstore.testing import ScriptedModel


class Opaque:
    """A type pydantic cannot describe as JSON schema."""


def test_a_parameter_type_without_json_schema_names_the_tool() -> None:
    def lookup(thing: Opaque) -> str:
        """Look a thing up.

        Args:
            thing: The thing.
        """
        return "x"

    with pytest.raises(UserError, match=r"tool 'lookup'.*JSON") as caught:
        function_tool(lookup)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("session", ["user_42", 42, object()])
async def test_a_session_that_is_not_a_session_is_a_user_error(session: Any) -> None:
    model = ScriptedModel()
    with pytest.raises(UserError, match="session must be a Session"):
        await Runner.run(Agent(name="A", model=model), "hi", session=session)
    assert model.calls == []
