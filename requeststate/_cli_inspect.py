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
from functools import partial
from typing import TypeGuard

from ._base64 import b64decode
from ._cli_shared import DEFAULT_KEY_ENV, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, add_key_options, read_keys
from ._codec import verify
from ._encrypted import AeadMode
from ._envelope import open_token
from ._errors import InvalidToken, Reason
from ._keys import KeyRing
from ._modes import Mode, mode_of, wire_modes
from ._options import INT64_MAX, INT64_MIN
from ._token_id import claim_id

__all__ = ["add_inspect", "run_inspect"]


@dataclass(frozen=True)
class Inspection:
    """What ``inspect`` found in a token: the one result that both outputs print."""

    length: int
    """Characters, once surrounding whitespace (a pasted newline) is stripped."""
    prefix: str | None = None
    """``v1.``, ``v1e.`` or ``v1x.``; ``None`` for text that is no requeststate token."""
    mode: Mode | None = None
    """Named only for a token known to be well-formed or valid: ``v1e.!!!!`` is not an encrypted anything."""
    unreadable: str | None = None
    """Why the token is not well-formed, read without a key; its reason is then ``malformed``."""
    key_env: str | None = None
    """The variable the key ring came from; ``None`` when there was no key and nothing was verified."""
    keys: KeyRing | None = None
    verified: bool = False
    reason: Reason | None = None
    """Why the token was refused or is unreadable; ``None`` when it verified or was only read."""
    hint: str | None = None
    """What a refusal may mean besides what its reason says."""
    exp: object = None
    """The expiry: verified under a key, else as an unverified ``v1.`` payload claims it (anything)."""
    token_id: object = None
    """The id, verified or claimed as ``exp`` is."""
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


class _Claims:
    """A guard that only records what verify hands a guard: the token's id and expiry.

    The public ``Guard`` protocol is how a verified token's id and ``exp`` leave
    the core; ``inspect`` claims nothing (it answers True, so nothing is refused).
    """

    token_id: str | None = None
    expires_at: int | None = None

    def claim(self, token_id: str, expires_at: int, now: int, /) -> bool:
        self.token_id, self.expires_at = token_id, expires_at
        return True


def _prefix(token: str) -> str:
    return token[: token.index(".") + 1]


def _read_unverified_payload(token: str) -> object:
    """The payload of a ``v1.`` token, NOT verified: what the client can read too.

    ``None`` when it is not base64url JSON. Raises ``RecursionError`` for JSON
    nested too deeply to parse (the caller refuses it).
    """
    parts = token.split(".")
    raw = b64decode(parts[1]) if len(parts) == 3 else None
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _is_well_formed_sealed(token: str, mode: Mode) -> bool:
    # Only the framing: base64url of at least a nonce and a tag. Whether it
    # decrypts is for verify to say, with the key.
    (wire,) = wire_modes(mode)[1]
    body = b64decode(token[len(wire.prefix) :])
    return body is not None and isinstance(wire, AeadMode) and len(body) >= wire.shortest_blob


def _read_unverified(token: str, prefix: str, mode: Mode) -> Inspection:
    if mode is not Mode.SIGNED:
        if not _is_well_formed_sealed(token, mode):
            unreadable = f"not a well-formed {prefix} token: the body is not a nonce and a tag in base64url"
            return Inspection(len(token), prefix, unreadable=unreadable, reason=Reason.MALFORMED)
        return Inspection(len(token), prefix, mode)
    try:
        payload = _read_unverified_payload(token)
        # ensure_ascii: the payload is the client's to write, so no raw control
        # characters reach the terminal.
        shown = None if payload is None else json.dumps(payload, indent=2, ensure_ascii=True)
    except RecursionError:
        unreadable = "not a well-formed v1. token: its payload is JSON nested too deeply"
        return Inspection(len(token), prefix, unreadable=unreadable, reason=Reason.MALFORMED)
    if shown is None:
        unreadable = "not a well-formed v1. token: the payload is not readable base64url JSON"
        return Inspection(len(token), prefix, unreadable=unreadable, reason=Reason.MALFORMED)
    fields = payload if isinstance(payload, dict) else {}
    return Inspection(
        len(token),
        prefix,
        mode,
        exp=fields.get("exp"),
        token_id=_claimed(fields.get("id"), fields.get("iat")),
        state=fields.get("s"),
        payload=shown,
    )


def _binding_hint(
    prefix: str, mode: Mode, reason: Reason, subject: str | None, tool: str | None
) -> str | None:
    # A refusal for want of --subject or --tool: say so when a flag is missing.
    missing = [flag for flag, value in (("--subject", subject), ("--tool", tool)) if value is None]
    if not missing:
        return None
    fix = f"pass {' and '.join(missing)} as at mint"
    if reason is Reason.WRONG_BINDING:
        return f"a {prefix} token is bound to the subject and tool it was minted for: {fix}"
    if reason is Reason.BAD_SIGNATURE and mode is not Mode.SIGNED:
        # An AEAD tag covers the bind tag: the right key, opened for another identity, fails as a wrong one.
        return (
            f"the tag of a {prefix} token also binds the subject and tool it was minted for: without them, "
            f"the right key is refused as a wrong one is; {fix}"
        )
    return None


def _verify(token: str, mode: Mode, key_env: str, keys: KeyRing, options: VerifyOptions) -> Inspection:
    claims = _Claims()
    subject = "" if options.subject is None else options.subject
    verify_at = partial(
        verify,
        token,
        keys,
        mode=mode,
        subject=subject,
        tool=options.tool,
        now=options.now,
        leeway=options.leeway,
        metrics=None,  # the command line serves no clients: it has nothing to count
    )
    try:
        try:
            state = verify_at(guard=claims)
        except InvalidToken as refused:
            if refused.reason is not Reason.MALFORMED:
                raise
            # With a guard, a token minted without an id (by mcp.d) is refused as
            # malformed; without one it may still verify.
            state = verify_at()
    except InvalidToken as refused:
        prefix = _prefix(token)
        hint = _binding_hint(prefix, mode, refused.reason, options.subject, options.tool)
        # Expired, so its MAC or tag verified and its binding held: when it expired is known.
        exp = _expiry(token, mode, keys, subject, options) if refused.reason is Reason.EXPIRED else None
        return Inspection(
            len(token), prefix, key_env=key_env, keys=keys, reason=refused.reason, hint=hint, exp=exp
        )
    return Inspection(
        len(token),
        _prefix(token),
        mode,
        key_env=key_env,
        keys=keys,
        verified=True,
        exp=None if claims.expires_at is None else claims.expires_at - options.leeway,
        token_id=claims.token_id,
        state=state,
    )


def _expiry(token: str, mode: Mode, keys: KeyRing, subject: str, options: VerifyOptions) -> int | None:
    """The ``exp`` of a token refused as expired: opened again with every check but the expiry's.

    ``None`` if it is not this identity's: a ``v1.`` token's expiry is checked before its binding.
    """
    forever = INT64_MAX - INT64_MIN  # a leeway no expiry passes
    try:
        payload, _ = open_token(
            token, wire_modes(mode)[1], keys, subject, options.tool, options.now, forever, len(token)
        )
    except InvalidToken:
        return None
    return payload.exp


def _examine(token: str, key_env: str | None, keys: KeyRing | None, options: VerifyOptions) -> Inspection:
    """What ``token`` shows: verified under ``keys`` (from ``key_env``) if given, else read as anyone can.

    Raises ``ValueError`` for an ``options.now`` or ``options.leeway`` out of range.
    """
    mode = mode_of(token)
    if mode is None:
        unreadable = "not a requeststate token: no v1., v1e. or v1x. prefix"
        return Inspection(len(token), unreadable=unreadable, reason=Reason.MALFORMED)
    if key_env is None or keys is None:
        return _read_unverified(token, _prefix(token), mode)
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


def _claimed(token_id: object, minted: object) -> object:
    """What a guard would claim for an unverified payload's ``id`` and ``iat``, as for a verified one."""
    if isinstance(token_id, str) and isinstance(minted, int) and not isinstance(minted, bool):
        return claim_id(token_id, minted)
    return token_id


def _print_claims(exp: object, token_id: object, now: int) -> None:
    print(f"expires: {_when(exp, now)}")
    # ensure_ascii: in an unverified v1. payload the id is anyone's to write, and no
    # escape sequence of theirs may reach the terminal.
    shown = json.dumps(token_id, ensure_ascii=True) if isinstance(token_id, str) else None
    print(f"id:      {shown or 'none (cannot be made single-use)'}")


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
        _print_claims(found.exp, found.token_id, now)
        print(f"state:   {json.dumps(found.state, ensure_ascii=True)}")
    elif found.payload is None:
        print(f"mode:    {found.mode}")
        print(f"state:   sealed: set {DEFAULT_KEY_ENV} or pass --key-env to verify and read it,")
        print("         with its expiry and id")
    else:
        print(f"mode:    {found.mode}")
        print(f"UNVERIFIED (anyone can write this; set {DEFAULT_KEY_ENV} or pass --key-env to verify):")
        _print_claims(found.exp, found.token_id, now)
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
        "state": found.state if isinstance(found.state, str) else None,
    }


def run_inspect(args: argparse.Namespace) -> int:
    """``requeststate inspect``: 0 verified or read, 1 refused or unreadable, 2 a bad key or option."""
    # strip: a token pasted or read from a file often ends in a newline.
    raw: str = sys.stdin.read() if args.token == "-" else args.token  # noqa: S105 (not a password)
    token = raw.strip()
    key_env = args.key_env or (DEFAULT_KEY_ENV if os.environ.get(DEFAULT_KEY_ENV, "").strip() else None)
    keys = None if key_env is None else read_keys(key_env, args.key_encoding)
    if key_env is not None and keys is None:
        return EXIT_USAGE
    now = int(time.time()) if args.now is None else args.now
    try:
        found = _examine(token, key_env, keys, VerifyOptions(args.subject, args.tool, now, args.leeway))
    except ValueError as error:  # --now or --leeway out of range: verify never raises for the token
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
        inspect, f"environment variable holding the secrets (default: {DEFAULT_KEY_ENV}, when it is set)"
    )
    inspect.add_argument("--subject", default=None, help="the subject the token must be bound to")
    inspect.add_argument("--tool", default=None, help="the tool the token must be bound to")
    inspect.add_argument("--now", type=int, default=None, help="unix seconds to verify at (default: now)")
    inspect.add_argument("--leeway", type=int, default=0, help="seconds of clock skew tolerated")
    inspect.add_argument(
        "--json", action="store_true", help="print one JSON object (fields: docs/cli.md) instead of lines"
    )
