"""The report as JUnit XML (``--junit FILE``), so that a CI system shows each check: one ``<testcase>``
per check on each state, a ``<failure>`` for a FAIL, an ``<error>`` for an ERROR, ``<skipped>`` for a
SKIP; every detail also in ``<system-out>``.

Text a server wrote (its name, its messages, quoted in a detail) reaches the file escaped twice over:
``escape`` spells out what XML 1.0 cannot carry at all (control characters, lone surrogates), which
``xml.etree`` would write as they are, then ``xml.etree`` escapes markup (``<``, ``&``, ``]]>``,
quotes).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from ._report import Report, escape

SUITE: Final = "requeststate probe"


def _element(parent: ET.Element, tag: str, text: str = "", **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {name: escape(value) for name, value in attributes.items()})
    if text:
        element.text = escape(text)
    return element


def junit(report: Report) -> ET.ElementTree[ET.Element]:
    """``report`` as a JUnit XML tree: one suite named for the server, a test case per row."""
    counts = report.counts()
    seconds = f"{sum(check.seconds for check in report.checks):.3f}"
    totals = {
        "tests": str(len(report.checks)),
        "failures": str(counts["FAIL"]),
        "errors": str(counts["ERROR"]),
        "skipped": str(counts["SKIP"]),
        "time": seconds,
    }
    root = ET.Element("testsuites", {"name": SUITE, **totals})
    suite = _element(root, "testsuite", name=f"{SUITE}: {report.target.describe()}", **totals)
    properties = _element(suite, "properties")
    for name, value in (
        ("server", report.server),
        ("protocol", report.protocol),
        ("workers", ", ".join(report.workers)),
        ("coverage", report.coverage),
        ("verdict", report.headline()),
    ):
        if value:
            _element(properties, "property", name=name, value=value)
    for check in report.checks:
        case = _element(
            suite,
            "testcase",
            classname=check.scope or SUITE,
            name=f"{check.id}: {check.name}",
            time=f"{check.seconds:.3f}",
        )
        if check.result == "FAIL":
            _element(case, "failure", check.detail, message=check.flaw, type="FAIL")
        elif check.result == "ERROR":
            _element(case, "error", check.detail, message=check.detail, type="ERROR")
        elif check.result == "SKIP":
            _element(case, "skipped", message=check.detail)
        _element(case, "system-out", f"{check.result}: {check.text()}")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: Report, path: Path) -> None:
    """Write ``report`` to ``path`` as JUnit XML (UTF-8, with its declaration)."""
    junit(report).write(path, encoding="utf-8", xml_declaration=True)
