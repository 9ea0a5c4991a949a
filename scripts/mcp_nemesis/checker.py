"""The checker of an MCP nemesis run: what the history shows against what the docs promise.

- **double redemptions:** a flow's token accepted more than once (its round 2, a replay, a swap): 0;
- **cross-talk:** an accepted round 2 whose answer is not its own flow's (restaurant and state): 0;
- **wrong codes:** an answer that is not the one docs/deployment.md ("What a client sees") promises
  for what happened: 0. A forged or swapped token: -32602 (or a re-elicit), whatever the store does
  (the bindings are checked before the guard). A replay: -32602, or -32603 while the store may not
  answer. A round 2: accepted, or -32603 while the store may not answer, or -32602 where its state
  was lost (its token minted before the store's memory began again after a loss, or within the
  window that opens: the memory begins at the first claim after the loss, not at the loss; or an
  earlier try of it went unanswered or unchecked, so its claim may have landed). No
  answer at all only while a worker was killed, paused or restarted; any other code, never.
- **resume:** for each fault, seconds from its end until a flow started after it completed;
- **in-flight lost:** for each fault, the flows in flight when it began, and how many never completed.

"While": from a fault's start to ``GRACE`` seconds after its end, the time a guard's client takes to
notice a server that came back (a Redis Cluster client rebuilds its map of the slots after a
failover: 2.3 s in one run).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from requeststate import DEFAULT_CLOCK_SKEW
from scripts.mcp_nemesis import history as h
from scripts.nemesis.workers import OFFSET

GRACE = 5.0
LOSS_WINDOW = DEFAULT_CLOCK_SKEW + 2 * OFFSET + 1.5
"""Seconds after the memory began again within which a token minted may be refused: ``clock_skew``,
the workers' clock offsets each way, and a second's rounding (a token's ``iat`` is whole seconds)."""
SLOW_RESUME = 20.0
"""A fault after whose end no new flow completed within this many seconds is counted as not resumed."""

# Which faults may leave a request unchecked (-32603), and which unanswered.
UNCHECKED_BY = ("store", "link", "worker-pause")
UNANSWERED_BY = ("worker-kill", "worker-pause", "rolling-restart")
REFUSED = (h.INVALID, h.REELICIT)
UNSURE = (h.UNCHECKED, h.NO_ANSWER)
"""Outcomes after which the guard may or may not have claimed."""
CLAIMING = (h.REDEEM, h.REPLAY, h.SWAP)
"""The requests that carry the flow's own token: each one accepted is a redemption of it."""


@dataclass
class Check:
    """The checker's verdict on one history."""

    attempts: Sequence[h.Attempt]
    flows: Sequence[h.Flow]
    faults: Sequence[h.FaultWindow]

    def double_redemptions(self) -> int:
        """Flows whose token was accepted more than once."""
        accepted = Counter(a.flow for a in self.attempts if a.kind in CLAIMING and a.outcome == h.ACCEPTED)
        return sum(1 for count in accepted.values() if count > 1)

    def cross_talk(self) -> int:
        """Accepted round 2s (or replays, or swaps) whose answer is not their flow's own."""
        return sum(
            1
            for a in self.attempts
            if a.kind in CLAIMING and a.outcome == h.ACCEPTED and a.text != h.expected_answer(a.flow)
        )

    def wrong_codes(self) -> Counter[str]:
        """Answers that are not the documented one for what happened, by the rule each breaks."""
        return Counter(rule for rule, _ in self.wrong_answers())

    def wrong_answers(self) -> list[tuple[str, h.Attempt]]:
        """Each answer that is not the documented one for what happened, and the rule it breaks."""
        minted = {flow.flow: flow.minted for flow in self.flows}
        windows = self._loss_windows()
        uncertain: set[int] = set()  # flows whose round 2 went unchecked or unanswered once
        wrong = []
        for attempt in sorted(self.attempts, key=lambda a: a.sent):
            rule = self._rule_broken(
                attempt, minted.get(attempt.flow, 0.0), attempt.flow in uncertain, windows
            )
            if rule is not None:
                wrong.append((rule, attempt))
            if attempt.kind == h.REDEEM and attempt.outcome in UNSURE:
                uncertain.add(attempt.flow)
        return wrong

    def _rule_broken(
        self, attempt: h.Attempt, minted: float, uncertain: bool, windows: Sequence[tuple[float, float]]
    ) -> str | None:
        outcome, kind = attempt.outcome, attempt.kind
        if outcome == h.NO_ANSWER:
            return None if self._during(attempt, UNANSWERED_BY) else f"{kind}: no answer, no worker fault"
        if kind == h.ROUND1:
            return None if outcome == h.ACCEPTED else f"round1: {outcome}"
        if kind in (h.FORGED, h.SWAP):
            # A swap accepted is a double redemption or cross-talk, counted there too.
            return None if outcome in REFUSED else f"{kind}: {outcome}, not refused as invalid"
        if outcome == h.UNCHECKED:
            return None if self._during(attempt, UNCHECKED_BY) else f"{kind}: unchecked, the store answering"
        if kind == h.REPLAY:
            return None if outcome in (*REFUSED, h.ACCEPTED) else f"replay: {outcome}"  # accepted: a double
        if outcome in REFUSED:
            lost = uncertain or any(loss <= attempt.answered and minted < end for loss, end in windows)
            return None if lost else "redeem: refused, its state not lost"
        return None if outcome == h.ACCEPTED else f"redeem: {outcome}"

    def _during(self, attempt: h.Attempt, causes: Sequence[str]) -> bool:
        return any(
            (fault.hits in causes or fault.kind in causes)
            and attempt.sent <= fault.ended + GRACE
            and attempt.answered >= fault.began
            for fault in self.faults
        )

    def _loss_windows(self) -> list[tuple[float, float]]:
        """Per loss of claims: from when it may have happened, the fault's start (an eviction burst takes
        the claims at any moment of it, and reports its end), to the end of the window in which a token
        minted may be refused: ``LOSS_WINDOW`` after the first claim the guard answered after the loss
        (when the store's memory began again), or after the fault's end if that is later."""
        windows = []
        for fault in self.faults:
            if fault.lost is not None:
                claims = [
                    a.answered
                    for a in self.attempts
                    if a.kind in (h.REDEEM, h.REPLAY) and a.sent >= fault.lost and a.outcome not in UNSURE
                ]
                windows.append((fault.began, max(fault.ended, min(claims, default=0.0)) + LOSS_WINDOW))
        return windows

    def resume(self) -> dict[str, list[float]]:
        """Per kind of fault, seconds from each one's end until a flow started after it completed."""
        done = sorted((flow.started, flow.ended) for flow in self.flows if flow.completed)
        times: dict[str, list[float]] = defaultdict(list)
        for fault in self.faults:
            after = [ended for started, ended in done if started > fault.ended]
            if after:
                times[fault.kind].append(min(after) - fault.ended)
        return dict(times)

    def not_resumed(self, until: float) -> int:
        """Faults that ended ``SLOW_RESUME`` before ``until`` after which no flow completed within it."""
        done = [(flow.started, flow.ended) for flow in self.flows if flow.completed]
        return sum(
            1
            for fault in self.faults
            if fault.ended + SLOW_RESUME < until
            and not any(
                started > fault.ended and ended <= fault.ended + SLOW_RESUME for started, ended in done
            )
        )

    def in_flight_lost(self) -> list[tuple[str, int, int]]:
        """Per fault: its kind, the flows in flight when it began, and how many of them never completed."""
        rows = []
        for fault in self.faults:
            caught = [
                flow for flow in self.flows if flow.started < fault.began < (flow.ended or float("inf"))
            ]
            rows.append((fault.kind, len(caught), sum(not flow.completed for flow in caught)))
        return rows

    def summary(self, until: float) -> dict[str, Any]:
        """The figures of the run, under the names the JSON keeps."""
        wrong = self.wrong_codes()
        start = min((flow.started for flow in self.flows), default=0.0)
        lost: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for kind, caught, never in self.in_flight_lost():
            lost[kind][0] += caught
            lost[kind][1] += never
        return {
            "flows": len(self.flows),
            "flows completed": sum(flow.completed for flow in self.flows),
            "redemptions": sum(a.kind in CLAIMING and a.outcome == h.ACCEPTED for a in self.attempts),
            "requests": len(self.attempts),
            "replays tried": sum(a.kind == h.REPLAY for a in self.attempts),
            "forgeries tried": sum(a.kind in (h.FORGED, h.SWAP) for a in self.attempts),
            "double_redemptions": self.double_redemptions(),
            "cross_talk": self.cross_talk(),
            "wrong_codes": sum(wrong.values()),
            "wrong codes by rule": dict(wrong),
            # Seconds from the first flow's start: where to look in the faults' timeline.
            "wrong answers": [
                {
                    "rule": rule,
                    "via": a.via,
                    "sent": round(a.sent - start, 2),
                    "answered": round(a.answered - start, 2),
                }
                for rule, a in self.wrong_answers()[:20]
            ],
            "fault timeline": [
                {"fault": f.kind, "began": round(f.began - start, 2), "ended": round(f.ended - start, 2)}
                for f in self.faults
            ],
            "outcomes": {
                kind: dict(Counter(a.outcome for a in self.attempts if a.kind == kind))
                for kind in (h.ROUND1, h.REDEEM, h.REPLAY, h.SWAP, h.FORGED)
            },
            "faults": dict(Counter(fault.kind for fault in self.faults)),
            "resume s": {
                kind: {"p50": round(statistics.median(times), 1), "max": round(max(times), 1)}
                for kind, times in sorted(self.resume().items())
            },
            "not resumed": self.not_resumed(until),
            "in-flight lost": {
                kind: {"in flight": row[0], "lost": row[1]} for kind, row in sorted(lost.items())
            },
        }

    def failed(self, until: float) -> bool:
        """Whether the run broke a promise: a double redemption, cross-talk, a wrong code, no resume."""
        return bool(
            self.double_redemptions() or self.cross_talk() or self.wrong_codes() or self.not_resumed(until)
        )
