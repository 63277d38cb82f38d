"""docs/design-report.md names every parameter whose source cites the design report, with its place."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from quirobot_description.parameters import DEFAULT_PARAMETER_FILE

DOC = Path(__file__).resolve().parents[2] / "docs" / "design-report.md"

#: Where a source cites the report, and the heading of the page's section for that place.
PLACES = {
    "report DH table": "## Denavit-Hartenberg table",
    "report joint limits": "## Joint limits",
    "report ch.5": "## Chapter 5: dynamics",
    "report ch.6": "## Chapter 6: servo drives",
    "computed: report ch.6": "## Chapter 6: servo drives",
}


def _leaves(node, path=""):
    if isinstance(node, dict) and {"value", "source"} <= set(node):
        yield path, node["source"]
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else key)


def _cited() -> dict[str, str]:
    """Dotted key -> the place in the report its source cites (PLACES' keys)."""
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    cited = {}
    for key, source in _leaves(raw):
        place = next((p for p in sorted(PLACES, key=len, reverse=True) if source.startswith(p)), None)
        if place is not None:
            cited[key] = place
        else:
            assert not source.startswith(("report", "computed: report")), f"{key}: unknown place {source!r}"
    return cited


def _sections() -> dict[str, str]:
    text = DOC.read_text()
    parts = re.split(r"(?m)^(## .*)$", text)
    return {heading: body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_every_key_citing_the_report_is_in_the_section_of_its_place():
    cited = _cited()
    assert len(cited) > 50
    sections = _sections()
    for key, place in cited.items():
        heading = next(h for h in sections if h.startswith(PLACES[place]))
        assert f"`{key}`" in sections[heading], f"{key} ({place}) is missing from '{heading}'"


def test_the_page_names_no_key_the_parameter_file_lacks():
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    keys = {key for key, _ in _leaves(raw)}
    named = set(re.findall(r"`([a-z_0-9]+(?:\.[a-z_0-9]+)+)`", DOC.read_text()))
    named = {name for name in named if not name.endswith((".py", ".yaml", ".md"))}
    assert named - keys == set()
