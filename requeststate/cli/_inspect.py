"""``requeststate inspect``: what a token shows anyone, or under a key whether it verifies and what it holds.

One examination (``Inspection``), printed two ways: as lines for a person, or
with ``--json`` as one JSON object for a script (its fields: docs/cli.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import textwrap
import time
from dataclasses import dataclass
from typing import Final, TypeGuard

import requeststate as rs

from ._shared import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, add_key_options, read_keys

__all__ = ["add_inspect", "run_inspect"]

# The earliest time a codec verifies at: a token opened then shows its claims whatever its
# expiry, which is then judged at --now (an expired token still tells when it expired).
_BEFORE_EVERY_EXPIRY: Final = -(2**63)


@dataclass(frozen=True)
class Inspection:
    """What ``inspect`` found in a token: the one result that both outputs print."""

    length: int
    """Characters, once surrounding whitespace (a pasted newline) is stripped."""
    prefix: str | None = None
    """``v1.``, ``v1e.`` or ``v1x.``; ``None`` for text that is no requeststate token."""
    mode: rs.Mode | None = None
    """Named only for a token known to be well-formed or valid: ``v1e.!!!!`` is not an encrypted anything."""
    unreadable: str | None = None
    """Why the token is not well-formed, read without a key; its reason is then ``malformed``."""
    key_env: str | None = None
    """The variable the key ring came from; ``None`` when there was no key and nothing was verified."""
    keys: rs.KeyRing | None = None
    verified: bool = False
    reason: rs.Reason | None = None
    """Why the token was refused or is unreadable; ``None`` when it verified or was only read."""
    hint: str | None = None
    """What a refusal may mean besides what its reason says."""
    exp: object = None
    """The expiry: verified under a key, else as an unverified ``v1.`` payload claims it (anything)."""
    token_id: object = None
    """The id, verified or claimed as ``exp`` is."""
    minted: object = None
    """When the token was minted (its ``iat``), verified or claimed as ``exp`` is."""
    state: object = None
    """The state's text when verified; without a key, the unverified ``v1.`` payload's ``s``."""
    payload: str | None = None
    """An unverified ``v1.`` payload as indented JSON, control characters escaped."""


@dataclass(frozen=True)
class VerifyOptions:
    """What a token is verified against: the identity (``None``: not given), the time and the leeway."""

    subject: str | None
    tool: str | None
    now: int
    leeway: int


def _read_unverified(token: str, mode: rs.Mode) -> Inspection:
    """What anyone can read of ``token``: for ``v1.``, its payload, NOT verified (the client can write it)."""
    try:
        payload = rs.peek(token).payload
    except rs.InvalidToken:
        shape = "a payload and a MAC" if mode is rs.Mode.SIGNED else "a nonce and a tag"
        unreadable = f"not a well-formed {mode.prefix} token: the body is not {shape} in base64url"
        return Inspection(len(token), mode.prefix, unreadable=unreadable, reason=rs.Reason.MALFORMED)
    if payload is None:
        return Inspection(len(token), mode.prefix, mode)
    try:
        fields = json.loads(payload)
        # ensure_ascii: the payload is the client's to write, so no raw control
        # characters reach the terminal.
        shown = json.dumps(fields, indent=2, ensure_ascii=True)
    except RecursionError:
        unreadable = "not a well-formed v1. token: its payload is JSON nested too deeply"
        return Inspection(len(token), mode.prefix, unreadable=unreadable, reason=rs.Reason.MALFORMED)
    except ValueError:
        unreadable = "not a well-formed v1. token: the payload is not readable JSON"
        return Inspection(len(token), mode.prefix, unreadable=unreadable, reason=rs.Reason.MALFORMED)
    claimed = fields if isinstance(fields, dict) else {}
    return Inspection(
        len(token),
        mode.prefix,
        mode,
        exp=claimed.get("exp"),
        token_id=claimed.get("id"),
        minted=claimed.get("iat"),
        state=claimed.get("s"),
        payload=shown,
    )


# The flags name what encode() was given; protect() binds a string of its own (requeststate.mcp's
# boundary_tool), so the hint must not promise that the flags verify its tokens.
_PROTECT_NOTE: Final = (
    "A token that requeststate.mcp's protect() minted is bound to its request (method, target, "
    "arguments, audience, principal), which --subject and --tool do not name, except under "
    "bind='mcpd': --subject the access token's sub, --tool the tool's name"
)


def _binding_hint(mode: rs.Mode, reason: rs.Reason, subject: str | None, tool: str | None) -> str | None:
    # A refusal for want of --subject or --tool: say so when a flag is missing.
    missing = [flag for flag, value in (("--subject", subject), ("--tool", tool)) if value is None]
    if not missing:
        return None
    fix = f"pass {' and '.join(missing)} as encode() was given them. {_PROTECT_NOTE}"
    prefix = mode.prefix
    if reason is rs.Reason.WRONG_BINDING:
        return f"a {prefix} token is bound to the subject and tool it was minted for: {fix}"
    if reason is rs.Reason.BAD_SIGNATURE and mode is not rs.Mode.SIGNED:
        # An AEAD tag covers the bind tag: the right key, opened for another identity, fails as a wrong one.
        return (
            f"the tag of a {prefix} token also binds the subject and tool it was minted for: without them, "
            f"the right key is refused as a wrong one is; {fix}"
        )
    return None


def _verify(token: str, mode: rs.Mode, key_env: str, keys: rs.KeyRing, options: VerifyOptions) -> Inspection:
    """``token`` verified under ``keys`` for the identity and time of ``options``.

    Raises ``ValueError`` for a ``--leeway`` out of range.
    """
    # metrics=None: the command line serves no clients, so it has nothing to count.
    codec = rs.Codec(keys, mode=mode, leeway=options.leeway, metrics=None)
    subject = "" if options.subject is None else options.subject
    try:
        claims = codec.open(token, subject=subject, tool=options.tool, now=_BEFORE_EVERY_EXPIRY)
    except rs.InvalidToken as refused:
        hint = _binding_hint(mode, refused.reason, options.subject, options.tool)
        return Inspection(
            len(token), mode.prefix, key_env=key_env, keys=keys, reason=refused.reason, hint=hint
        )
    if options.now > claims.exp + codec.leeway:
        # Authentic and bound to this identity, so when it expired is known.
        return Inspection(
            len(token), mode.prefix, key_env=key_env, keys=keys, reason=rs.Reason.EXPIRED, exp=claims.exp
        )
    return Inspection(
        len(token),
        mode.prefix,
        mode,
        key_env=key_env,
        keys=keys,
        verified=True,
        exp=claims.exp,
        token_id=claims.token_id,
        minted=claims.minted,
        state=claims.state,
    )


def _examine(token: str, key_env: str | None, keys: rs.KeyRing | None, options: VerifyOptions) -> Inspection:
    """What ``token`` shows: verified under ``keys`` (from ``key_env``) if given, else read as anyone can.

    Raises ``ValueError`` for an ``options.leeway`` out of range.
    """
    mode = rs.Mode.of(token)
    if mode is None:
        unreadable = "not a requeststate token: no v1., v1e. or v1x. prefix"
        return Inspection(len(token), unreadable=unreadable, reason=rs.Reason.MALFORMED)
    if key_env is None or keys is None:
        return _read_unverified(token, mode)
    return _verify(token, mode, key_env, keys, options)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _utc(exp: int) -> str | None:
    try:
        return datetime.datetime.fromtimestamp(exp, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return None


def _when(exp: object, now: int) -> str:
    if exp is None:
        return "not given"
    if not _is_int(exp):
        return "not an integer"
    left = exp - now
    stamp = _utc(exp) or "beyond the calendar"
    return f"{stamp} (unix {exp}), " + (f"{left} s left" if left >= 0 else f"expired {-left} s ago")


def _print_claims(found: Inspection, now: int) -> None:
    print(f"expires: {_when(found.exp, now)}")
    # ensure_ascii: in an unverified v1. payload the id is anyone's to write, and no
    # escape sequence of theirs may reach the terminal.
    shown = json.dumps(found.token_id, ensure_ascii=True) if isinstance(found.token_id, str) else None
    print(f"id:      {shown or 'none (cannot be made single-use)'}")
    minted = found.minted
    if not _is_int(minted):
        print("minted:  not given")
    else:
        print(f"minted:  {_utc(minted) or 'beyond the calendar'} (unix {minted})")


def _print_text(found: Inspection, now: int) -> None:
    """``found`` as lines on stdout, and why a token is unreadable on stderr."""
    if found.prefix is not None:
        print(f"prefix:  {found.prefix}")
        print(f"length:  {found.length} characters")
    if found.unreadable is not None:
        print(found.unreadable, file=sys.stderr)
    elif found.reason is not None:
        print(f"REFUSED under {found.key_env}: {found.reason}")
        if found.exp is not None:
            print(f"expires: {_when(found.exp, now)}")
        if found.hint is not None:
            print(textwrap.fill(found.hint, width=100, initial_indent="hint:    ", subsequent_indent=" " * 9))
    elif found.verified:
        print(f"VALID under {found.keys!r} from {found.key_env}")
        print(f"mode:    {found.mode}")
        _print_claims(found, now)
        print(f"state:   {json.dumps(found.state, ensure_ascii=True)}")
    elif found.payload is None:
        print(f"mode:    {found.mode}")
        print(f"state:   sealed: set {rs.ENV_KEYS} or pass --key-env to verify and read it,")
        print("         with its expiry and id")
    else:
        print(f"mode:    {found.mode}")
        print(f"UNVERIFIED (anyone can write this; set {rs.ENV_KEYS} or pass --key-env to verify):")
        _print_claims(found, now)
        print("payload:")
        print(found.payload)


def _as_json(found: Inspection, now: int) -> dict[str, object]:
    """``found`` as the object ``--json`` prints: the fields docs/cli.md documents, never key bytes."""
    exp = found.exp if _is_int(found.exp) else None
    return {
        "prefix": found.prefix,
        "mode": None if found.mode is None else found.mode.value,
        "length": found.length,
        "verified": found.verified,
        "reason": None if found.reason is None else found.reason.value,
        "hint": found.hint,
        "key_env": found.key_env,
        "fingerprint": found.keys.fingerprint if found.verified and found.keys is not None else None,
        "exp": exp,
        "expires": None if exp is None else _utc(exp),
        "seconds_left": None if exp is None else exp - now,
        "id": found.token_id if isinstance(found.token_id, str) else None,
        "minted": found.minted if _is_int(found.minted) else None,
        "state": found.state if isinstance(found.state, str) else None,
    }


def run_inspect(args: argparse.Namespace) -> int:
    """``requeststate inspect``: 0 verified or read, 1 refused or unreadable, 2 a bad key or option."""
    # strip: a token pasted or read from a file often ends in a newline.
    raw: str = sys.stdin.read() if args.token == "-" else args.token  # noqa: S105 (not a password)
    token = raw.strip()
    key_env = args.key_env or (rs.ENV_KEYS if os.environ.get(rs.ENV_KEYS, "").strip() else None)
    keys = None if key_env is None else read_keys(key_env, args.key_encoding)
    if key_env is not None and keys is None:
        return EXIT_USAGE
    now = int(time.time()) if args.now is None else args.now
    try:
        found = _examine(token, key_env, keys, VerifyOptions(args.subject, args.tool, now, args.leeway))
    except ValueError as error:  # --leeway out of range: verification never raises for the token
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        # ensure_ascii: what an unverified payload holds is the client's to write.
        print(json.dumps(_as_json(found, now), indent=2, ensure_ascii=True))
    else:
        _print_text(found, now)
    return EXIT_OK if found.reason is None else EXIT_REFUSED


def add_inspect(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``inspect`` subcommand and its options."""
    inspect = commands.add_parser(
        "inspect",
        help="show a token's mode, expiry and id; verify it with a key",
        description="With a key (--key-env VAR, or REQUESTSTATE_KEYS when it is set): verify the "
        "token and print its expiry, id, time left and state, or the refusal reason. Without one: the "
        "prefix, the size and, for v1. tokens, the payload, its expiry and id marked UNVERIFIED.",
    )
    inspect.add_argument(
        "token", help="the token, or - to read it from stdin (keeps it out of shell history)"
    )
    add_key_options(
        inspect, f"environment variable holding the secrets (default: {rs.ENV_KEYS}, when it is set)"
    )
    inspect.add_argument("--subject", default=None, help="the subject the token must be bound to")
    inspect.add_argument("--tool", default=None, help="the tool the token must be bound to")
    inspect.add_argument("--now", type=int, default=None, help="unix seconds to verify at (default: now)")
    inspect.add_argument("--leeway", type=int, default=0, help="seconds of clock skew tolerated")
    inspect.add_argument(
        "--json", action="store_true", help="print one JSON object (fields: docs/cli.md) instead of lines"
    )
