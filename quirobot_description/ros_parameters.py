"""Declare a node's parameters from its `NodeSchema` (a ROS adapter: rclpy imported inside only).

    values = declare_parameters(node, DRIVE_NODE)   # {name: value}, every parameter declared

Each parameter gets the rcl_interfaces ParameterDescriptor of its schema row
(`node_parameters.descriptor_fields`: type, description with the unit, FloatingPointRange or
IntegerRange, read_only, the choices as additional_constraints), so `ros2 param describe` shows
what docs/node_parameters.md says. rclpy checks the type and range of a value given at start-up
(launch file, `--ros-args -p`) and raises its own exception, whose text repeats the value and the
name three times; this helper reads the value back and raises `NodeParameterError` instead, one
line from the schema ("parameter lockstep_timeout = -1 s is outside 0.1 to 600 s"). Choices are
not a descriptor field: they are checked here after the declaration.
"""

from __future__ import annotations

from quirobot_description.node_parameters import NodeParameter, NodeSchema, descriptor_fields

__all__ = ["declare_parameters", "parameter_descriptor"]


def parameter_descriptor(parameter: NodeParameter):
    """The rcl_interfaces/msg/ParameterDescriptor of one schema row."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType

    fields = descriptor_fields(parameter)
    return ParameterDescriptor(
        name=fields["name"],
        type=getattr(ParameterType, f"PARAMETER_{fields['type'].upper()}"),
        description=fields["description"],
        additional_constraints=fields["additional_constraints"],
        read_only=fields["read_only"],
        floating_point_range=[
            FloatingPointRange(from_value=low, to_value=high, step=step)
            for low, high, step in fields["floating_point_range"]
        ],
        integer_range=[
            IntegerRange(from_value=low, to_value=high, step=step)
            for low, high, step in fields["integer_range"]
        ],
    )


def declare_parameters(node, schema: NodeSchema) -> dict[str, object]:
    """Declare every parameter of `schema` on the rclpy `node`; their values by name. A value
    given outside its type, range or choices raises NodeParameterError (a ValueError), one line."""
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.exceptions import ParameterException

    values: dict[str, object] = {}
    for parameter in schema.parameters:
        default = list(parameter.default) if parameter.type == "string_array" else parameter.default
        try:
            value = node.declare_parameter(parameter.name, default, parameter_descriptor(parameter)).value
        except ParameterException:
            # Refused by its descriptor, so not declared: declare it untyped to read what was given.
            untyped = ParameterDescriptor(dynamic_typing=True)
            given = node.declare_parameter(parameter.name, None, untyped).value
            parameter.check(given)  # raises with the schema's words
            raise  # rclpy refused a value the schema accepts: its own message
        parameter.check(value)
        values[parameter.name] = list(value) if parameter.type == "string_array" else value
    return values
