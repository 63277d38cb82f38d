"""Real rclpy: declare_parameters gives every node parameter the descriptor of its schema row, and
a value given outside its type or range stops the declaration with the schema's one line.

In-process rclpy nodes (no launch, no DDS peer): each of the three nodes' schemas is declared on a
plain node and read back through the parameter services' own code path (`describe_parameter`,
which `ros2 param describe` calls over DescribeParameters); a node started with a bad override
(as `--ros-args -p` or a launch file gives it) must refuse it naming the parameter. The running
kinematics_node is checked over DDS in test_launch_kinematics.py.
"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from quirobot_cli.parameter_reference import NODE_SCHEMAS  # noqa: E402
from quirobot_control.bridge.drive_node_parameters import DRIVE_NODE  # noqa: E402
from quirobot_control.procedures.task_node_parameters import TASK_NODE  # noqa: E402
from quirobot_description.node_parameters import NodeParameterError  # noqa: E402
from quirobot_description.ros_parameters import declare_parameters  # noqa: E402
from quirobot_kinematics.kinematics_node_parameters import KINEMATICS_NODE  # noqa: E402

#: rcl_interfaces/msg/ParameterType, written out (not read from the message package).
TYPES = {"bool": 1, "integer": 2, "double": 3, "string": 4, "string_array": 9}


@pytest.fixture
def make_node():
    from rclpy.node import Node

    rclpy.init()
    nodes = []

    def make(name: str, **overrides):
        from rclpy.parameter import Parameter

        node = Node(name, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()
    rclpy.shutdown()


@pytest.mark.parametrize("schema", NODE_SCHEMAS, ids=lambda s: s.node)
def test_every_parameter_gets_its_rows_descriptor(schema, make_node):
    node = make_node(f"schema_{schema.node}")
    values = declare_parameters(node, schema)
    defaults = {p.name: p.default for p in schema.parameters}
    assert values == {name: list(v) if isinstance(v, tuple) else v for name, v in defaults.items()}
    for parameter in schema.parameters:
        described = node.describe_parameter(parameter.name)
        assert described.type == TYPES[parameter.type], parameter.name
        assert described.read_only == parameter.read_only
        assert described.description.startswith(parameter.description)
        if parameter.unit is not None:
            assert described.description.endswith(f"[{parameter.unit}]")
        ranges = described.floating_point_range if parameter.type == "double" else described.integer_range
        if parameter.low is None:
            assert len(described.floating_point_range) == len(described.integer_range) == 0
        else:
            (bounds,) = ranges
            assert (bounds.from_value, bounds.to_value) == pytest.approx((parameter.low, parameter.high))
        if parameter.choices:
            assert all(choice in described.additional_constraints for choice in parameter.choices)


def test_an_override_out_of_range_is_refused_in_one_line(make_node):
    node = make_node("out_of_range", lockstep_timeout=-1.0)
    with pytest.raises(NodeParameterError) as refused:
        declare_parameters(node, DRIVE_NODE)
    assert str(refused.value) == "parameter lockstep_timeout = -1 s is outside 0.1 to 600 s"


def test_an_integer_for_a_double_is_refused_saying_how_to_write_it(make_node):
    node = make_node("integer_for_double", start_delay=4)
    expected = "parameter start_delay must be of type double, got 4: write 4.0"
    with pytest.raises(NodeParameterError, match=expected):
        declare_parameters(node, TASK_NODE)


def test_a_string_outside_its_choices_is_refused(make_node):
    node = make_node("bad_choice", drive_backend="ethercat")
    expected = "parameter drive_backend must be one of simulated, canopen, got 'ethercat'"
    with pytest.raises(NodeParameterError, match=expected):
        declare_parameters(node, DRIVE_NODE)


def test_a_read_only_parameter_refuses_a_change_at_run_time(make_node):
    from rclpy.parameter import Parameter

    node = make_node("read_only")
    declare_parameters(node, KINEMATICS_NODE)
    (refused,) = node.set_parameters([Parameter("parameter_file", value="/tmp/other.yaml")])
    assert not refused.successful and "read-only" in refused.reason
    (changed,) = node.set_parameters([Parameter("orientation_tolerance", value=1e-3)])
    assert changed.successful
    (out_of_range,) = node.set_parameters([Parameter("orientation_tolerance", value=2.0)])
    assert not out_of_range.successful
