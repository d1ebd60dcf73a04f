"""Runner: the agent loop with automatic session memory.

```text
settings  = session.session_settings overlaid by run_config.session_settings
(wait for the writes other runs on this session have in flight: an abandoned run's last one)
history   = await load_history(session, settings)    the window that fits the limits
pending   = tool calls after the history's last message without outputs, inside the window or
            not (load_unfinished_turn): run and saved first; sent only with their call
model_in  = merge(history, input, callback)          pure (session_input.py)
await session.add_items(new_input)                   before the first model call
loop: response = model(call_model_input_filter(model_in + generated))
      run the requested function tools concurrently
      await session.add_items(turn_items)            one write per completed model call
      (streamed: each item saved when done, each tool output when its tool returns)
      await session.run_compaction(...)              if the session is compaction-aware
await session.record_turn_usage(usage)               if the session records usage per turn
```
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any, NamedTuple

from openai import AsyncOpenAI, OpenAIError
from openai.types.responses import Response, ResponseFunctionToolCall

from ._run_steps import (
    StreamedOutputs,
    call_model,
    item_saver,
    pending_tool_calls,
    run_tools,
    storable,
    write,
    writes_landed,
)
from .agent import Agent, default_model_name
from .conversion import clean_input_item, input_items_from, output_item_to_input_item
from .exceptions import MaxTurnsExceeded, ModelBehaviorError, ModelCallError, UserError
from .items import TResponseInputItem
from .memory.history import drop_orphan_tool_outputs, load_history, load_unfinished_turn
from .memory.session import (
    Session,
    is_openai_responses_compaction_aware_session,
    is_usage_recording_session,
)
from .memory.settings import SessionSettings, coerce_session_settings
from .models.interface import Model, ModelRequest
from .models.openai_responses import OpenAIResponsesModel
from .models.response_check import check_response, check_usage
from .result import RunResult, RunResultBase, RunResultStreaming
from .run_config import CallModelData, ModelInputData, RunConfig
from .session_input import merge_session_input

__all__ = ["Runner", "session_history_limit", "session_history_settings"]

DEFAULT_MAX_TURNS = 10


def session_history_settings(session: Any, run_config: RunConfig | None) -> SessionSettings:
    """Resolve the history limits of a run: the run's settings laid over the session's.

    Args:
        session: The run's session. Its `session_settings` may be ours, a dict, or another
            library's settings object with a `limit` attribute (the OpenAI Agents SDK's).
        run_config: The run's configuration, or `None`.

    Returns:
        The settings whose `limit`, `limit_turns` and `limit_tokens` bound the history the run
        loads.
    """
    own = getattr(session, "session_settings", None)
    if isinstance(own, SessionSettings | Mapping):
        base = coerce_session_settings(own) or SessionSettings()
    elif own is not None:
        base = SessionSettings(limit=getattr(own, "limit", None))
    else:
        base = SessionSettings()
    return base.resolve(run_config.session_settings if run_config else None)


def session_history_limit(session: Any, run_config: RunConfig | None) -> int | None:
    """Resolve how many history items a run loads: the run's settings over the session's.

    Args:
        session: The run's session.
        run_config: The run's configuration, or `None`.

    Returns:
        The limit, or `None` for the whole history.
    """
    return session_history_settings(session, run_config).limit


class Runner:
    """Runs agents: calls the model, runs its tools, and keeps the session's history.

    Every method takes the same arguments; see [`Runner.run`][turnstore.Runner.run].
    """

    @classmethod
    async def run(
        cls,
        agent: Agent,
        input: str | list[TResponseInputItem],
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
    ) -> RunResult:
        """Run `agent` on `input` until it gives a final answer.

        With a session, the run:

        - loads the history that fits the session settings (see
          [`SessionSettings`][turnstore.SessionSettings]);
        - saves your input before the first model call;
        - saves each model call's output together with its tools' outputs;
        - first runs any tool calls that an interrupted run left without output.

        A model call that fails or is cancelled saves nothing; what was saved before it stays.
        A run started right after a cancelled one on the same session id, in the same process,
        waits for that run's last write.

        Args:
            agent: The agent to run.
            input: A user message, or a list of Responses API input items. With a session,
                `[]` continues from the stored history without adding anything: the way to
                retry a run that failed, whose input is already stored.
            session: Keeps the conversation history across runs; any object that follows the
                [`Session`][turnstore.Session] protocol, including the OpenAI Agents SDK's
                sessions.
            run_config: Per-run options; see [`RunConfig`][turnstore.RunConfig].
            max_turns: How many model calls the run may make.
            previous_response_id: Continue a server-side response chain instead of a session.
            conversation_id: Use a server-side OpenAI conversation instead of a session.

        Returns:
            The run's final output, new items, usage and response ids.

        Raises:
            UserError: `session` is not a session, a session is combined with
                `previous_response_id` or `conversation_id`, or an option is unusable; raised
                before anything is read or called. Also raised, before the model is called,
                when there is nothing to send (`[]` with an empty or no session).
            TypeError: `input` is neither a string nor a list of dicts.
            MaxTurnsExceeded: No final answer within `max_turns` model calls.
            ModelBehaviorError: The model called an unknown tool, sent invalid tool arguments,
                answered with neither a message nor a tool call, or gave an unusable response.
                Unusable means, for example, `{}`, `[]`, an `output` that is not a list of typed
                items, a message without content, unusable token counts, or a stream that ends
                without its final response. Nothing of that answer is stored.
            ModelCallError: The model's API call failed, or its answer could not be read (not
                JSON, or cut off); the underlying exception is chained.

        Example:
            ```python
            async with SQLiteSession("user_42", "chats.db") as session:
                await Runner.run(agent, "My name is Ada.", session=session)
                try:
                    result = await Runner.run(agent, "What is my name?", session=session)
                except ModelCallError:
                    # The question is stored already: retry from the history, adding nothing.
                    result = await Runner.run(agent, [], session=session)
            assert "Ada" in result.final_output
            ```
        """
        # How it goes (docs/architecture.md): the history window drops tool outputs whose call
        # is outside it. Pending tool calls at the end of the history run first, also those the
        # window leaves out, and the model then gets an output only with its call. Each model
        # call's items are saved in one `add_items` call. A write that another run on the same
        # session id (in any thread of this process) has in progress lands before the history
        # is read (memory/mutation.py).
        call = _RunCall(
            agent, input, session, run_config, max_turns, previous_response_id, conversation_id
        )
        result = RunResult(input=_copy_input(input), last_agent=agent)
        await _execute(call, state=result, streaming=None)
        return result

    @classmethod
    def run_sync(
        cls,
        agent: Agent,
        input: str | list[TResponseInputItem],
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
    ) -> RunResult:
        """Run the agent from synchronous code, in a new event loop; see `Runner.run`.

        Raises:
            UserError: Called while an event loop is running in this thread (inside
                `async def` code or a notebook cell): use `await Runner.run(...)` there.

        Example:
            ```python
            session = SQLiteSession("s1")
            result = Runner.run_sync(agent, "Hi", session=session)
            print(result.final_output)
            session.close()
            ```
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UserError(
                "Runner.run_sync() cannot be called while an event loop is running in this "
                "thread; use `await Runner.run(...)` instead"
            )
        return asyncio.run(
            cls.run(
                agent,
                input,
                session=session,
                run_config=run_config,
                max_turns=max_turns,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
            )
        )

    @classmethod
    def run_streamed(
        cls,
        agent: Agent,
        input: str | list[TResponseInputItem],
        *,
        session: Session | None = None,
        run_config: RunConfig | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
    ) -> RunResultStreaming:
        """Prepare a streamed run; it starts when you iterate `result.stream_events()`.

        Same arguments and errors as `Runner.run`. The model's answer is streamed (server-sent
        events), so text arrives as it is generated.

        With a session, each item is saved as soon as it is complete, before its
        `RunItemEvent`, and no item is saved twice. A model item is complete when the stream
        reports it done, a reasoning item with the item it precedes, and a tool output when its
        tool returns. A cancelled or failed streamed run keeps every item it completed.
        `Runner.run(agent, [], session=session)` resumes from them, after waiting for a write
        the cancelled run still had in progress. Leaving the `stream_events()` loop cancels the
        run; `await result.aclose()` also waits until it has let go.

        Returns:
            A [`RunResultStreaming`][turnstore.RunResultStreaming]; iterate its
            `stream_events()` to run the agent.

        Example:
            ```python
            result = Runner.run_streamed(agent, "Write a haiku", session=session)
            async for event in result.stream_events():
                if isinstance(event, TextDeltaEvent):
                    print(event.delta, end="")
            ```
        """
        call = _RunCall(
            agent, input, session, run_config, max_turns, previous_response_id, conversation_id
        )
        _check_options(call)
        # Validate now, so a bad input fails at the call rather than inside the stream.
        input_items_from(input)

        async def start(state: RunResultStreaming) -> RunResult:
            await _execute(call, state=state, streaming=state)
            state.is_complete = True
            return RunResult(
                input=state.input,
                last_agent=state.last_agent,
                new_items=state.new_items,
                final_output=state.final_output,
                raw_responses=state.raw_responses,
                usage=state.usage,
            )

        result = RunResultStreaming(input=_copy_input(input), last_agent=agent)
        result._start = start
        return result


def _copy_input(value: str | list[TResponseInputItem]) -> str | list[TResponseInputItem]:
    return value if isinstance(value, str) else input_items_from(value)


class _RunCall(NamedTuple):
    """The arguments of one call of a `Runner` method."""

    agent: Agent
    input: str | list[TResponseInputItem]
    session: Session | None
    run_config: RunConfig | None
    max_turns: int
    previous_response_id: str | None
    conversation_id: str | None


def _check_options(call: _RunCall) -> None:
    session, max_turns = call.session, call.max_turns
    previous_response_id, conversation_id = call.previous_response_id, call.conversation_id
    if session is not None and not all(
        callable(getattr(session, method, None))
        for method in ("get_items", "add_items", "pop_item", "clear_session")
    ):
        raise UserError(
            f"session must be a Session (get_items, add_items, pop_item, clear_session), "
            f"not {type(session).__name__}; for example SQLiteSession('user_42')"
        )
    if session is not None and (previous_response_id is not None or conversation_id is not None):
        given = "previous_response_id" if previous_response_id is not None else "conversation_id"
        raise UserError(
            f"a session cannot be combined with {given}: the session already carries the "
            f"history, and {given} would make the server add it again; pass one or the other"
        )
    if previous_response_id is not None and conversation_id is not None:
        raise UserError("pass previous_response_id or conversation_id, not both")
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise UserError(f"max_turns must be a positive int, not {max_turns!r}")


async def _resolve_model(agent: Agent, run_config: RunConfig) -> tuple[Model, AsyncOpenAI | None]:
    """Return the model to call, and the client the run created for it (to close at the end)."""
    chosen = run_config.model if run_config.model is not None else agent.model
    if chosen is None:
        chosen = default_model_name()
    if isinstance(chosen, str):
        if run_config.openai_client is not None:
            return OpenAIResponsesModel(chosen, client=run_config.openai_client), None
        try:
            # The constructor loads certificates from disk: build it in a worker thread.
            client = await asyncio.to_thread(AsyncOpenAI)
        except OpenAIError as exc:
            raise ModelCallError(
                f"cannot create an OpenAI client: {exc} "
                "(set OPENAI_API_KEY, or pass RunConfig(openai_client=...))"
            ) from exc
        return OpenAIResponsesModel(chosen, client=client), client
    if not isinstance(chosen, Model):
        raise UserError(f"model must be a model name or a Model, not {type(chosen).__name__}")
    return chosen, None


async def _execute(
    call: _RunCall, *, state: RunResultBase, streaming: RunResultStreaming | None
) -> None:
    """Run one call of `Runner.run` (`streaming` is `None`) or `Runner.run_streamed`."""
    _check_options(call)
    agent, input, session, run_config, max_turns, previous_response_id, conversation_id = call
    if not isinstance(agent, Agent):
        raise UserError(f"Runner needs an Agent, not {type(agent).__name__}")
    config = run_config if run_config is not None else RunConfig()
    if not isinstance(config, RunConfig):
        raise UserError(f"run_config must be a RunConfig, not {type(config).__name__}")
    new_items = input_items_from(input)
    settings = agent.model_settings.resolve(config.model_settings)
    tools = {tool.name: tool for tool in agent.tools}

    # Resolve the model first: a missing API key fails before the session is touched.
    model, owned_client = await _resolve_model(agent, config)
    try:
        # Load -> merge -> save the input: one read, one write, before any model call.
        if session is not None:
            # The window that fits the limits; it never starts with an orphaned tool output.
            # A run abandoned a moment ago may still be finishing a write: read after it.
            await writes_landed(session)
            limits = session_history_settings(session, config)
            stored = await load_history(session, limits)
            history = [clean_input_item(item) for item in stored]
            whole = (
                limits.limit is None and limits.limit_turns is None and limits.limit_tokens is None
            )
            unfinished = await load_unfinished_turn(session, stored, whole=whole)
            pending = pending_tool_calls(unfinished)
            if pending:
                # An interrupted run saved tool calls whose outputs it never produced (some may
                # be outside the window): complete that turn first, or the calls stay without
                # output in the history and the Responses API rejects every window holding one.
                completed = await run_tools(
                    pending, tools, agent, on_output=item_saver(session, streaming)
                )
                if streaming is None:
                    await write(session, session.add_items(completed))
                # Sent with the window only when their call is in it.
                history = drop_orphan_tool_outputs([*history, *completed])
                state.new_items.extend(completed)
            merged = await merge_session_input(history, new_items, config.session_input_callback)
            model_input = merged.model_input
            if merged.to_save:
                await write(session, session.add_items(merged.to_save))
        else:
            model_input = new_items

        server_state = previous_response_id is not None or conversation_id is not None
        if not model_input and not server_state:
            raise UserError(
                "nothing to send to the model: the input is empty and "
                + (
                    "the session holds no history"
                    if session is not None
                    else "there is no session; pass a message"
                )
            )
        chain_id = previous_response_id
        turn_input = model_input
        # Tool outputs that completed an interrupted turn are in the history already.
        completed_first = len(state.new_items)
        save_item = item_saver(session, streaming)
        for _turn in range(max_turns):
            call_input, instructions = await _filter_model_input(
                config,
                agent,
                turn_input if server_state else model_input + state.new_items[completed_first:],
                agent.instructions,
            )
            request = ModelRequest(
                instructions=instructions,
                input=call_input,
                model_settings=settings,
                tools=list(agent.tools),
                previous_response_id=chain_id,
                conversation_id=conversation_id,
            )
            # Checked before any of it is used or stored: a malformed answer fails here.
            streamed = StreamedOutputs(save_item)
            response = check_response(await call_model(model, request, streaming, streamed))
            state.raw_responses.append(response)
            state.usage.add_response_usage(response.usage)

            outputs = storable(
                [output_item_to_input_item(item) for item in response.output],
                f"response {response.id}",
            )
            calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
            if not calls and not any(item.type == "message" for item in response.output):
                raise ModelBehaviorError(
                    f"response {response.id} holds neither a message nor a tool call "
                    f"(output types: {[item.type for item in response.output]})"
                )
            if streaming is not None:
                # Streamed: what the stream did not report as done is saved (and announced)
                # now, before any tool runs; each tool output is saved as it is produced.
                await streamed.finish(outputs)
            tool_outputs = await run_tools(calls, tools, agent, on_output=save_item)

            turn_items = outputs + tool_outputs
            if session is not None:
                if streaming is None:
                    # One write per model call: a tool call is never stored without its output.
                    await write(session, session.add_items(turn_items))
                await _maybe_compact(session, response, settings.store, state)
            state.new_items.extend(turn_items)
            if previous_response_id is not None:
                chain_id = response.id
            turn_input = tool_outputs
            if calls and settings.tool_choice not in (None, "auto", "none"):
                # A forced tool choice applies to the first call only, or it would loop.
                settings = dataclasses.replace(settings, tool_choice=None)
            if not calls:
                state.final_output = _message_text(response)
                if is_usage_recording_session(session):
                    # The run's usage goes with the turn it answered: no call to forget.
                    await write(session, session.record_turn_usage(state.usage))
                return
        raise MaxTurnsExceeded(
            f"agent {agent.name!r} made {max_turns} model calls without a final answer "
            "(raise max_turns if the task needs more tool rounds)"
        )
    finally:
        if owned_client is not None:
            await owned_client.close()


async def _maybe_compact(
    session: Session, response: Response, store: bool | None, state: RunResultBase
) -> None:
    if not is_openai_responses_compaction_aware_session(session):
        return
    # Not shielded as a whole: a cancelled run must not wait for the `responses.compact` call.
    # The session shields its own history replacement (all or nothing).
    usage = await session.run_compaction({"response_id": response.id, "store": store is not False})
    if usage is not None:
        state.usage.add_response_usage(check_usage(usage, "the compaction call"))


def _message_text(response: Response) -> str:
    messages = [item for item in response.output if item.type == "message"]
    last = messages[-1]
    return "".join(part.text for part in last.content if part.type == "output_text")


async def _filter_model_input(
    config: RunConfig,
    agent: Agent,
    items: list[TResponseInputItem],
    instructions: str | None,
) -> tuple[list[TResponseInputItem], str | None]:
    """Pass one model call's input through `RunConfig.call_model_input_filter`, if any."""
    model_filter = config.call_model_input_filter
    if model_filter is None:
        return items, instructions
    if not callable(model_filter):
        raise UserError(
            f"call_model_input_filter must be a function, not {type(model_filter).__name__}"
        )
    data = CallModelData(
        model_data=ModelInputData(input=copy.deepcopy(items), instructions=instructions),
        agent=agent,
    )
    returned: Any = model_filter(data)
    if inspect.isawaitable(returned):
        returned = await returned
    new_input = getattr(returned, "input", None)
    new_instructions = getattr(returned, "instructions", None)
    if not isinstance(new_input, list) or not (
        new_instructions is None or isinstance(new_instructions, str)
    ):
        raise UserError(
            "call_model_input_filter must return a ModelInputData (an input list and "
            f"instructions), not {type(returned).__name__}"
        )
    return new_input, new_instructions
