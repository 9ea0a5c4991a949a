"""What a run's history shows: doubles (what single use forbids), resume times, collateral, and per
fault what was in flight and replayed; as figures and as Markdown tables."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from scripts.nemesis.history import ACCEPTED, REFUSALS, Fault, Redemption

__all__ = ["Run", "report"]


@dataclass
class Run:
    """One topology's run: its history, the faults injected, and the checker's figures."""

    topology: str
    seconds: float
    history: list[Redemption]
    faults: list[Fault]
    mismatched: list[Redemption]
    """The claims of the verifiers whose settings differ from the namespace's: each must be refused."""

    def doubles(self) -> int:
        """Tokens accepted more than once: what single use forbids."""
        accepted = Counter(r.token_id for r in self.history if r.outcome == ACCEPTED)
        return sum(1 for count in accepted.values() if count > 1)

    def resume_times(self) -> list[float]:
        """For each loss, seconds from the loss until a token minted after it was accepted."""
        return [time for times in self.resume_by_fault().values() for time in times]

    def resume_by_fault(self) -> dict[str, list[float]]:
        """Per kind of fault, for each of its losses: seconds until a token minted after it was accepted."""
        firsts = sorted((r.at, r.minted) for r in self.history if r.first and r.outcome == ACCEPTED)
        times: dict[str, list[float]] = defaultdict(list)
        for fault in self.faults:
            if fault.lost is not None:
                after = [at for at, minted in firsts if minted > fault.lost]
                if after:
                    times[fault.kind].append(min(after) - fault.lost)
        return dict(times)

    def in_flight_by_fault(self) -> dict[str, tuple[int, int]]:
        """Per kind of fault: the tokens in flight at it, and how many of them were refused.

        A token is in flight at a fault when it was minted before the fault struck (its loss, or
        its beginning if it lost nothing) and first redeemed after: a refusal of it is the fault's
        collateral. A token in flight at several faults counts for the last.
        """
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        strikes = sorted(
            (fault.began if fault.lost is None else fault.lost, fault.kind) for fault in self.faults
        )
        for record in self.history:
            struck = [kind for at, kind in strikes if record.minted < at <= record.at]
            if record.first and struck:
                row = table[struck[-1]]
                row[0] += 1
                row[1] += record.outcome != ACCEPTED
        return {kind: (row[0], row[1]) for kind, row in table.items()}

    def summary(self) -> dict[str, Any]:
        firsts = [r for r in self.history if r.first]
        refused = Counter(r.outcome for r in firsts if r.outcome != ACCEPTED)
        replays = [r for r in self.history if not r.first]
        resume = self.resume_times()
        return {
            "topology": self.topology,
            "seconds": round(self.seconds, 1),
            "redemptions": len(self.history),
            "first redemptions": len(firsts),
            "replays": len(replays),
            "replays accepted": sum(r.outcome == ACCEPTED for r in replays),
            "double redemptions": self.doubles(),
            "faults": dict(Counter(fault.kind for fault in self.faults)),
            "resume p50 s": round(statistics.median(resume), 1) if resume else None,
            "resume max s": round(max(resume), 1) if resume else None,
            "collateral": round(sum(refused.values()) / max(1, len(firsts)), 3),
            "first refused by reason": dict(refused),
            "refused by reason": self.refusals(),
            "mismatched claims": len(self.mismatched),
            "mismatched accepted": sum(r.outcome == ACCEPTED for r in self.mismatched),
        }

    def refusals(self) -> dict[str, int]:
        """Every redemption refused (first or replay), by reason: never counted as accepted."""
        return dict(Counter(r.outcome for r in self.history if r.outcome != ACCEPTED))

    def by_fault(self) -> dict[str, tuple[int, int]]:
        """Per kind of fault: replays after it of tokens accepted before it, and how many were accepted."""
        accepted_at: dict[str, float] = {}
        for record in sorted(self.history, key=lambda r: r.at):
            if record.outcome == ACCEPTED:
                accepted_at.setdefault(record.token_id, record.at)
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        faults = sorted(self.faults, key=lambda f: f.began)
        for record in self.history:
            if record.first:
                continue
            before = [
                f for f in faults if accepted_at.get(record.token_id, float("inf")) < f.began <= record.at
            ]
            if before:
                row = table[before[-1].kind]
                row[0] += 1
                row[1] += record.outcome == ACCEPTED
        return {kind: (row[0], row[1]) for kind, row in table.items()}


def report(runs: list[Run]) -> str:
    """The history summary as Markdown tables."""
    lines = [
        "| topology | s | redemptions | replays | replays accepted | double redemptions | faults "
        "| resume p50 / max s | collateral | mismatched verifier: accepted of claims "
        f"| refused: {' / '.join(REFUSALS)} / other |",
        "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|",
    ]
    for one in runs:
        s = one.summary()
        faults = ", ".join(f"{kind} {count}" for kind, count in sorted(s["faults"].items()))
        lines.append(
            f"| {s['topology']} | {s['seconds']} | {s['redemptions']:,} | {s['replays']:,} "
            f"| {s['replays accepted']:,} | **{s['double redemptions']}** | {faults} "
            f"| {s['resume p50 s']} / {s['resume max s']} | {s['collateral']:.1%} "
            f"| {s['mismatched accepted']} of {s['mismatched claims']:,} "
            f"| {_by_reason(s['refused by reason'])} |"
        )
    lines += [
        "",
        "| topology | fault | injected | resume p50 / max s | in flight at it: refused of tokens "
        "| replays of tokens accepted before it | accepted again |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for one in runs:
        injected = Counter(fault.kind for fault in one.faults)
        resume, in_flight, replayed = one.resume_by_fault(), one.in_flight_by_fault(), one.by_fault()
        for kind in sorted(injected):
            times = resume.get(kind, [])
            resumed = f"{statistics.median(times):.1f} / {max(times):.1f}" if times else "-"
            tokens, refused = in_flight.get(kind, (0, 0))
            replays, again = replayed.get(kind, (0, 0))
            lines.append(
                f"| {one.topology} | {kind} | {injected[kind]} | {resumed} | {refused:,} of {tokens:,} "
                f"| {replays:,} | {again} |"
            )
    return "\n".join(lines)


def _by_reason(refused: dict[str, int]) -> str:
    counts = [refused.get(reason, 0) for reason in REFUSALS]
    counts.append(sum(refused.values()) - sum(counts))
    return " / ".join(f"{count:,}" for count in counts)
