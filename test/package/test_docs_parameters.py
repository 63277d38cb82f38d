"""docs/node_parameters.md and docs/parameter_files.md: their tables are the schemas' own."""

from __future__ import annotations

from pathlib import Path

import pytest

from quirobot_cli.parameter_reference import (
    FILE_SCHEMAS,
    FILE_TABLE,
    NODE_SCHEMAS,
    NODE_TABLE,
    main,
    replace_table,
    tables,
)

ROOT = Path(__file__).resolve().parents[2]


def _documented(generated) -> str:
    text = (ROOT / generated.page).read_text()
    return text[text.index(generated.begin) : text.index(generated.end) + len(generated.end)]


def _rows(generated) -> list[list[str]]:
    """The table's body rows, split into cells (the header and the rule left out)."""
    lines = [line for line in _documented(generated).splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:]]


@pytest.mark.parametrize("generated", [NODE_TABLE, FILE_TABLE], ids=lambda g: g.page)
def test_the_table_is_regenerated_from_the_schemas_without_a_difference(generated):
    assert _documented(generated) == tables()[generated], (
        f"{generated.page}'s table differs from the schemas: "
        "run `python -m quirobot_cli.parameter_reference --write`"
    )


def test_the_node_table_has_every_parameter_with_its_default_range_and_unit():
    # Independent of the rendering: every (node, name) of the schemas, and each number's bounds
    # and unit, found in the page's cells.
    rows = {(row[0], row[1].strip("`")): row for row in _rows(NODE_TABLE)}
    expected = {(schema.node, p.name): p for schema in NODE_SCHEMAS for p in schema.parameters}
    assert set(rows) == set(expected)
    assert {node for node, _ in rows} == {"drive_node", "task_node", "scope_servo_node", "kinematics_node"}
    for key, parameter in expected.items():
        row = rows[key]
        assert row[2] == parameter.type
        if parameter.unit is not None:
            low, high = float(row[4].split()[0]), float(row[4].split()[2])
            assert (low, high) == pytest.approx((parameter.low, parameter.high), rel=1e-5), key
            assert row[4].endswith(f" {parameter.unit}") and float(row[3].strip("`")) == parameter.default
        assert row[5] == ("yes" if parameter.read_only else "no")


def test_the_file_table_has_every_key_of_every_file():
    rows = {(row[0], row[1].strip("`")) for row in _rows(FILE_TABLE)}
    expected = {(schema.kind, key) for schema in FILE_SCHEMAS for key in schema.keys}
    assert rows == expected
    assert ("parameter file", "drive.control_rate") in rows and ("task file", "feed_rate") in rows


def test_the_generator_rewrites_only_the_table():
    text = "intro\n" + NODE_TABLE.begin + "\nstale\n" + NODE_TABLE.end + "\noutro\n"
    assert replace_table(text, NODE_TABLE, "TABLE") == "intro\nTABLE\noutro\n"


def test_the_generator_refuses_an_unknown_argument(capsys):
    assert main(["docs/x.md"]) == 2
    assert "usage" in capsys.readouterr().err


def test_the_pages_are_linked():
    readme = (ROOT / "README.md").read_text()
    assert "docs/node_parameters.md" in readme and "docs/parameter_files.md" in readme
