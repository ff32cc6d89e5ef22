"""JUnit XML: one testsuite per implementation, one testcase per fixture, for CI.

PASS is a plain testcase; FAIL and XPASS a <failure>; ERROR an <error>; SKIP and XFAIL
a <skipped> with the reason.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any


def class_name(*parts: str) -> str:
    """A dotted JUnit class name CI tools can group by: only letters, digits, ``_`` and
    ``-`` in each part (``exec:./my broker`` -> ``exec_my_broker``)."""
    return ".".join(re.sub(r"[^A-Za-z0-9_-]+", "_", part).strip("_") or "_" for part in parts)


def render(doc: dict[str, Any]) -> str:
    root = ET.Element("testsuites", name="kconform")
    fixtures = {f["id"]: f for f in doc["fixtures"]}
    totals: Counter[str] = Counter()
    for impl in doc["implementations"]:
        mine = [r for r in doc["results"] if r["implementation"] == impl["id"]]
        counts = Counter(r["status"] for r in mine)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=impl["id"],
            tests=str(len(mine)),
            failures=str(counts["FAIL"] + counts["XPASS"]),
            errors=str(counts["ERROR"]),
            skipped=str(counts["SKIP"] + counts["XFAIL"]),
            time=f"{sum(r['duration_ms'] for r in mine) / 1000:.3f}",
        )
        props = ET.SubElement(suite, "properties")
        for key in ("name", "version", "language"):
            ET.SubElement(props, "property", name=key, value=str(impl.get(key, "")))
        for r in mine:
            fixture = fixtures.get(r["fixture"], {})
            case = ET.SubElement(
                suite,
                "testcase",
                classname=class_name("kconform", impl["id"], fixture.get("group", "")),
                name=r["fixture"],
                file=fixture.get("path", ""),
                time=f"{r['duration_ms'] / 1000:.3f}",
            )
            status = r["status"]
            if status in ("FAIL", "XPASS"):
                message = r["reason"] if status == "FAIL" else f"unexpectedly passed (expected: {r['expected_reason']})"
                failure = ET.SubElement(case, "failure", message=message, type=status)
                if r.get("divergence"):
                    where = {k: v for k, v in r["divergence"].items() if k not in ("expected_state", "observed_state")}
                    failure.text = json.dumps(where, indent=1, ensure_ascii=False)
            elif status == "ERROR":
                error = ET.SubElement(case, "error", message=r["reason"], type="ERROR")
                error.text = r.get("detail", "")
            elif status in ("SKIP", "XFAIL"):
                reason = r["reason"] if status == "SKIP" else f"expected failure: {r['expected_reason']}"
                ET.SubElement(case, "skipped", message=reason)
        totals.update(counts)
    root.set("tests", str(len(doc["results"])))
    root.set("failures", str(totals["FAIL"] + totals["XPASS"]))
    root.set("errors", str(totals["ERROR"]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
