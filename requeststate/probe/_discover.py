"""Setting up a probe: what the server negotiated, which tools, prompts and resources answer
input-required, and each round of their flows that can be judged (its unmodified state accepted)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeAlias

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import InputRequiredResult, Prompt, Tool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ._decode import parse_json, split_prefix
from ._edits import edits
from ._placeholders import answers, every_argument, expand, placeholder_arguments, prompt_arguments
from ._report import ProbeOptions, Report, Scope
from ._session import (
    NOT_MCP,
    Endpoint,
    Kind,
    Outcome,
    ProbeError,
    Session,
    TransportFailure,
    asks,
    error_text,
    signature,
)


@dataclass
class Found:
    """What discovery found: the endpoints to probe, another for the cross-target check, and each
    round to probe."""

    endpoints: list[Endpoint]
    other: Endpoint | None
    scopes: list[Endpoint] = field(default_factory=list)  # each a round of an endpoint, walked to it


async def set_up(client: Client, report: Report, options: ProbeOptions) -> tuple[Session, Found]:
    """The session the checks run on and what they probe, found over ``client``; the report's head
    (protocol, server, first tool, state, baseline, budget) filled in on the way."""
    report.protocol = client.protocol_version
    report.server = client.server_info.name if client.server_info is not None else ""
    if report.protocol not in MODERN_PROTOCOL_VERSIONS:
        raise ProbeError(
            f"the server negotiated protocol {report.protocol}; input-required results need "
            f"{' or '.join(MODERN_PROTOCOL_VERSIONS)}"
        )
    session = Session(client)
    try:
        # A tool named exactly-once is probed as a tool named with ``tools`` is.
        wanted = tuple(dict.fromkeys((*options.tools, *options.exactly_once)))
        endpoints, other, untried = await _find(session, wanted, options.arguments, options.max_targets)
        first = endpoints[0]
        report.kind, report.tool, report.arguments = first.kind, first.name, first.arguments
        report.asks = asks(first.first)
        report.other_tool = other.label() if other is not None else None
        assert first.first.request_state is not None
        report.state = _describe_state(first.first.request_state)
        found = Found(endpoints, other)
        walked: list[str] = []
        for endpoint in endpoints:
            await _restart(session, endpoint)
            rounds, cut = await _rounds(
                session, endpoint, options.max_rounds, report, primary=endpoint is first
            )
            found.scopes += rounds
            walked.append(_walked(endpoint, len(rounds), cut))
        if other is not None and other not in endpoints:
            await _restart(session, other)
    except (TransportFailure, MCPError) as error:
        text = error_text(error) if isinstance(error, MCPError) else str(error)
        raise ProbeError(f"setting up the probe failed: {text}") from None
    report.budget = (
        f"{len(found.scopes)} states: {'; '.join(walked)} (budget: {options.max_targets} tools, prompts "
        f"or resources, {options.max_rounds} rounds each"
        + ("; reached, others not tried: --max-targets" if untried else "")
        + ")"
    )
    return session, found


def _walked(endpoint: Endpoint, rounds: int, cut: bool) -> str:
    """``tool book_table, rounds 1-2``: what of one endpoint was probed."""
    if not rounds:
        return f"{endpoint.label()}, none"
    shown = "round 1" if rounds == 1 else f"rounds 1-{rounds}"
    return f"{endpoint.label()}, {shown}" + (" (cut: --max-rounds)" if cut else "")


async def _find(
    session: Session, wanted: tuple[str, ...], arguments: dict[str, Any] | None, budget: int
) -> tuple[list[Endpoint], Endpoint | None, bool]:
    """What to probe: the named tools, else every tool, prompt and resource that answers
    input-required, up to ``budget``; another one for the cross-target check (with one tool named,
    the first other that answers); and whether the budget left some untried."""
    tools = await all_tools(session.client)
    pool = await candidates(session.client, tools, None if wanted else arguments)
    found: list[Endpoint] = []
    for name in wanted:
        named = [tool for tool in tools if tool.name == name]
        if not named:
            raise ProbeError(f"the server lists no tool named {name!r}")
        endpoint = await attempt(session, tool_candidate(named[0], arguments))
        if not isinstance(endpoint, Endpoint):
            raise ProbeError(
                f"tool {name!r} answered no input-required with a requestState to "
                + ("these arguments" if arguments is not None else "placeholder arguments")
                + "; pass --arguments JSON"
                + _answered([endpoint])
            )
        found.append(endpoint)
    pool = [c for c in pool if (c[0], c[1]) not in {("tool", name) for name in wanted}]
    probed = len(wanted) if wanted else budget
    errors: list[str] = []
    tried = 0
    for candidate in pool:
        if len(found) >= max(
            probed, 2
        ):  # one more than is probed when that is one: for the cross-target check
            break
        tried += 1
        endpoint = await attempt(session, candidate)
        if isinstance(endpoint, Endpoint):
            found.append(endpoint)
        else:
            errors.append(endpoint)
    if not found:
        raise ProbeError(
            "no listed tool, prompt or resource answered input-required with a requestState"
            + (" to these arguments" if arguments is not None else " to placeholder arguments")
            + "; name a tool with --tool and pass --arguments JSON"
            + _answered(errors)
        )
    other = found[1] if len(found) > 1 else None
    untried = not wanted and (len(found) > probed or tried < len(pool))
    return found[:probed], other, untried


def _answered(errors: list[str]) -> str:
    """The JSON-RPC errors met on the way to a first round (the first three), for the message."""
    named = [error for error in errors if error][:3]
    return f" (the server answered {'; '.join(named)})" if named else ""


def _describe_state(token: str) -> str:
    prefix, rest = split_prefix(token)
    if prefix:
        shape = f"{prefix} token, {rest.count('.') + 2} parts"
    elif parse_json(token) is not None:
        shape = "JSON text"
    else:
        shape = "no prefix"
    return f"{shape}, {len(token)} characters"


async def _restart(session: Session, target: Endpoint) -> None:
    """Learn what a re-elicit of ``target`` looks like: its first round's questions, compared in full,
    or by keys and methods where two first rounds differ (a nonce in a message)."""
    second, _ = await session.new_round(replace(target, round=1))
    if signature(second, loose=False) != signature(target.first, loose=False):
        session.loose = True
    target.restart = signature(target.first, loose=session.loose)


async def _rounds(
    session: Session, endpoint: Endpoint, most: int, report: Report, *, primary: bool
) -> tuple[list[Endpoint], bool]:
    """Walk ``endpoint``'s flow with placeholder answers, up to ``most`` rounds: each round whose
    unmodified state is accepted, and told apart from a re-elicit, is one to probe; and whether the
    flow went on past ``most``.

    The primary endpoint's first round must be (``ProbeError`` otherwise: nothing can be judged);
    a later round, or another endpoint, that is not is left out, the report saying why.
    """
    rounds: list[Endpoint] = []
    result = endpoint.first
    for number in range(1, most + 1):
        scope = replace(endpoint, first=result, round=number)
        assert result.request_state is not None
        described = _describe_state(result.request_state)
        outcome = await session.echo(scope, result.request_state, answers(result.input_requests))
        if outcome.restarted or not outcome.accepted:
            if primary and number == 1:
                raise ProbeError(_unjudgeable(outcome))
            reason = "it re-elicits" if outcome.restarted else outcome.detail.removeprefix("refused: ")
            refused = f"not probed: its unmodified state is refused ({reason})"
            report.scopes.append(Scope(scope.scope(), described, refused, probed=False))
            return _ended(rounds), False
        baseline = "the unmodified state is " + outcome.detail
        if primary and number == 1:
            report.baseline = baseline
        report.scopes.append(Scope(scope.scope(), described, baseline))
        following = outcome.following
        if following is None or following.request_state is None:
            return [*rounds, replace(scope, last=True, completes=True)], False
        rounds.append(scope)
        result = following
    return _ended(rounds), True


def _ended(rounds: list[Endpoint]) -> list[Endpoint]:
    """``rounds`` with the last marked so: the walk stopped there, before the flow's end."""
    return [*rounds[:-1], replace(rounds[-1], last=True)] if rounds else rounds


def _unjudgeable(outcome: Outcome) -> str:
    """Why the first state probed cannot be judged."""
    if outcome.restarted:
        return (
            "the server answers the unmodified state exactly as a call without requestState (it asks "
            "the same again), so a re-elicit cannot be told from acceptance: name a tool whose next "
            "round differs (--tool, --arguments)"
        )
    return (
        f"the unmodified state is not accepted ({outcome.detail.removeprefix('refused: ')}), so no "
        "mutation can be judged: check the server's keys and the tool's arguments (--arguments)"
    )


MAX_PAGES: Final = 5
"""The most pages of one listing (tools, prompts, resources, templates) read: a cursor may never end."""
MAX_LISTED: Final = 500
"""The most items of one listing kept."""

Candidate: TypeAlias = tuple[Kind, str, dict[str, Any], "dict[str, Any] | None"]
"""kind, name (or URI), arguments, other arguments for the binding check."""


def _changed(arguments: dict[str, Any], every: dict[str, Any]) -> dict[str, Any] | None:
    """The arguments with one value changed (a string, if any: the likeliest to stay valid); with
    none, every declared one; ``None`` if there are none."""
    found = edits(arguments, MAX_LISTED)
    if found:
        edit = next((edit for edit in found if edit.kind == "string"), found[0])
        changed: dict[str, Any] = edit.value  # type: ignore[assignment]
        return changed
    return every or None


def tool_candidate(tool: Tool, arguments: dict[str, Any] | None) -> Candidate:
    """How to call ``tool``: the given arguments, else placeholders for its required properties."""
    sent = placeholder_arguments(tool) if arguments is None else arguments
    return "tool", tool.name, sent, _changed(sent, every_argument(tool))


def _prompt_candidate(prompt: Prompt) -> Candidate:
    sent = prompt_arguments(prompt)
    every = {argument.name: "probe" for argument in prompt.arguments or ()}
    return "prompt", prompt.name, sent, _changed(sent, every)


async def candidates(client: Client, tools: list[Tool], arguments: dict[str, Any] | None) -> list[Candidate]:
    """Every tool not annotated destructive (called with ``arguments``, else placeholders), then every
    prompt, resource and resource template."""
    found = [
        tool_candidate(tool, arguments)
        for tool in tools
        # discovery never calls a tool that says it is destructive; name it with --tool
        if tool.annotations is None or tool.annotations.destructive_hint is not True
    ]
    capabilities = client.server_capabilities
    if capabilities.prompts is not None:
        found += [_prompt_candidate(prompt) for prompt in await _listed(client.list_prompts, "prompts")]
    if capabilities.resources is not None:
        found += [("resource", r.uri, {}, None) for r in await _listed(client.list_resources, "resources")]
        templates = await _listed(client.list_resource_templates, "resource_templates")
        found += [("resource", expand(t.uri_template), {}, None) for t in templates]
    return found


async def _listed(fetch: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    """A listing across its pages, up to ``MAX_PAGES`` pages and ``MAX_LISTED`` items."""
    try:
        listed = await fetch()
        items = list(getattr(listed, field))[:MAX_LISTED]
        pages = 1
        while listed.next_cursor and pages < MAX_PAGES and len(items) < MAX_LISTED:
            listed = await fetch(cursor=listed.next_cursor)
            pages += 1
            items += getattr(listed, field)[: MAX_LISTED - len(items)]
    except ValueError:  # pydantic's ValidationError
        raise TransportFailure(NOT_MCP) from None
    return items


async def all_tools(client: Client) -> list[Tool]:
    """Every tool the server lists, across pages."""
    return await _listed(client.list_tools, "tools")


async def attempt(session: Session, candidate: Candidate) -> Endpoint | str:
    """Call ``candidate`` once: the ``Endpoint`` if it answers input-required with a state, else its error."""
    kind, name, arguments, other = candidate
    try:
        result = await session.call_as(kind, name, arguments)
    except MCPError as error:
        return f"{kind} {name!r}: JSON-RPC {error.error.code} {error.error.message!r}"
    if isinstance(result, InputRequiredResult) and result.request_state is not None:
        return Endpoint(kind, name, arguments, result, other)
    return ""
