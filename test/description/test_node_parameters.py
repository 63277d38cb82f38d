"""quirobot_description.node_parameters: a schema row refuses what its type, range and choices
refuse, in one line naming the parameter, and its descriptor fields say what the row says."""

from __future__ import annotations

import pytest

from quirobot_description.node_parameters import (
    NodeParameter,
    NodeParameterError,
    NodeSchema,
    descriptor_fields,
)

TIMEOUT = NodeParameter("timeout", "double", 10.0, "How long.", unit="s", low=0.1, high=600.0)
COUNT = NodeParameter("count", "integer", 3, "How many.", unit="1", low=1, high=8)
MODE = NodeParameter("mode", "string", "full", "Which.", choices=("full", "approach"), read_only=False)
NAMES = NodeParameter("names", "string_array", ("a", "b"), "Which ones.")


@pytest.mark.parametrize("value", [0.1, 10.0, 600.0])
def test_a_value_in_range_passes(value):
    TIMEOUT.check(value)


@pytest.mark.parametrize(
    ("parameter", "value", "expected"),
    [
        (TIMEOUT, -1.0, "parameter timeout = -1 s is outside 0.1 to 600 s"),
        (TIMEOUT, 600.5, "parameter timeout = 600.5 s is outside 0.1 to 600 s"),
        (TIMEOUT, float("nan"), "parameter timeout = nan s is outside 0.1 to 600 s"),
        (TIMEOUT, 10, "parameter timeout must be of type double, got 10: write 10.0"),
        (TIMEOUT, True, "parameter timeout must be of type double, got True"),
        (COUNT, 9, "parameter count = 9 1 is outside 1 to 8 1"),
        (COUNT, 2.0, "parameter count must be of type integer, got 2.0"),
        (COUNT, False, "parameter count must be of type integer, got False"),
        (MODE, "partial", "parameter mode must be one of full, approach, got 'partial'"),
        (MODE, 1, "parameter mode must be of type string, got 1"),
        (NAMES, ["a", 2], "parameter names must be of type string_array, got ['a', 2]"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_it(parameter, value, expected):
    with pytest.raises(NodeParameterError) as refused:
        parameter.check(value)
    assert str(refused.value) == expected
    assert isinstance(refused.value, ValueError)  # the nodes' start-up catches ValueError


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (dict(type="float", default=1.0), "type must be one of"),
        (dict(type="double", default=1.0, low=0.0, high=2.0), "needs its unit and its range"),
        (dict(type="double", default=1.0, unit="s"), "needs its unit and its range"),
        (dict(type="double", default=5.0, unit="s", low=0.0, high=2.0), "is outside 0 to 2 s"),
        (dict(type="string", default="x", unit="s"), "a unit and a range are for numbers"),
        (dict(type="bool", default=False, choices=("a",)), "choices are for strings"),
        (dict(type="string", default="x", choices=("a", "b")), "must be one of a, b"),
    ],
)
def test_a_malformed_row_is_refused(row, problem):
    with pytest.raises(ValueError, match=problem):
        NodeParameter("p", description="A parameter.", **row)


def test_a_schema_refuses_a_parameter_declared_twice():
    with pytest.raises(ValueError, match="declared twice: timeout"):
        NodeSchema("n", (TIMEOUT, MODE, TIMEOUT))
    schema = NodeSchema("n", (TIMEOUT, MODE))
    assert schema.names == ("timeout", "mode") and schema["mode"] is MODE
    assert schema.defaults() == {"timeout": 10.0, "mode": "full"}
    with pytest.raises(KeyError, match="n has no parameter 'other'"):
        schema["other"]


def test_descriptor_fields_say_what_the_row_says():
    # rcl_interfaces/msg/ParameterDescriptor's fields, written out by hand for each kind of row.
    assert descriptor_fields(TIMEOUT) == {
        "name": "timeout",
        "type": "double",
        "description": "How long. [s]",
        "additional_constraints": "",
        "read_only": True,
        "floating_point_range": [(0.1, 600.0, 0.0)],
        "integer_range": [],
    }
    assert descriptor_fields(COUNT)["integer_range"] == [(1, 8, 1)]
    assert descriptor_fields(COUNT)["floating_point_range"] == []
    assert descriptor_fields(MODE) == {
        "name": "mode",
        "type": "string",
        "description": "Which.",
        "additional_constraints": "one of: full, approach",
        "read_only": False,
        "floating_point_range": [],
        "integer_range": [],
    }
    assert descriptor_fields(NAMES)["type"] == "string_array"
