"""The ROS parameters of our nodes, each declared once: type, default, unit, range, description.

generate_parameter_library's idea (ros2_control's controllers describe each parameter once, in a
YAML file, and the declarations, the validation and the docs are generated from it), in Python
and without ROS: every node has one `NodeSchema`, a tuple of `NodeParameter` rows kept beside the
core it configures (`quirobot_control.bridge.drive_node_parameters`,
`quirobot_control.procedures.task_node_parameters`, `quirobot_kinematics.kinematics_node_parameters`).
From that one place come:

- the declarations: `quirobot_description.ros_parameters.declare_parameters(node, schema)`, the
  nodes' only way to declare a parameter, gives each a rcl_interfaces ParameterDescriptor built
  from `descriptor_fields` (type, description with the unit, range, read_only, constraints);
- the start-up check: a value outside its type, range or choices stops the node with
  `NodeParameterError`, one line naming the parameter, the value and what it may be;
- the docs: the table of docs/node_parameters.md (`python -m quirobot_cli.parameter_reference --write`).

Ranges are plausibility bounds, as the parameter file's (`file_schema`): a value outside one is
a typo or a wrong unit (ms for s), not a design choice. They are not numbers of the robot: those
live in the parameter file. `read_only` (the default) marks a parameter read once at start-up:
changing it at run time would do nothing, so ROS refuses the change instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The parameter types (generate_parameter_library's and rcl_interfaces' ParameterType names)
#: and the Python values they hold.
PARAMETER_TYPES: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "integer": (int,),
    "double": (float,),
    "string": (str,),
    "string_array": (list, tuple),
}

__all__ = ["NodeParameter", "NodeParameterError", "NodeSchema", "PARAMETER_TYPES", "descriptor_fields"]


class NodeParameterError(ValueError):
    """A node parameter's value outside its type, range or choices (one line, naming it)."""


def _is_type(value: object, type_name: str) -> bool:
    if type_name in ("integer", "double") and isinstance(value, bool):
        return False  # bool is an int in Python, never a number here
    if type_name == "string_array":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return isinstance(value, PARAMETER_TYPES[type_name])


def _number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class NodeParameter:
    """One parameter of a node (module docstring). Numbers in SI units, `unit` names it."""

    name: str
    type: str  # a key of PARAMETER_TYPES
    default: bool | int | float | str | tuple[str, ...]
    description: str  # what it does, one sentence or two; the unit goes in `unit`
    unit: str | None = None  # the unit of a number ("s", "Hz", "rad"); None: not a quantity
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None
    choices: tuple[str, ...] = ()  # a string's allowed values (empty: any)
    read_only: bool = True  # read at start-up only (module docstring)

    def __post_init__(self) -> None:
        where = f"node parameter {self.name}"
        if self.type not in PARAMETER_TYPES:
            raise ValueError(f"{where}: type must be one of {', '.join(PARAMETER_TYPES)}, got {self.type!r}")
        numeric = self.type in ("integer", "double")
        if not numeric and (self.low is not None or self.high is not None or self.unit is not None):
            raise ValueError(f"{where}: a unit and a range are for numbers, not a {self.type}")
        if numeric and (self.low is None or self.high is None or self.unit is None):
            raise ValueError(f"{where}: a number needs its unit and its range (low, high)")
        if self.choices and self.type != "string":
            raise ValueError(f"{where}: choices are for strings, not a {self.type}")
        self.check(self.default)  # a default outside its own range is a bug of the table

    def check(self, value: object) -> None:
        """Raise NodeParameterError when `value` is not of this type, in range and among the choices."""
        if not _is_type(value, self.type):
            integer = isinstance(value, int) and not isinstance(value, bool)
            hint = f": write {value}.0" if integer and self.type == "double" else ""
            raise NodeParameterError(
                f"parameter {self.name} must be of type {self.type}, got {value!r}{hint}"
            )
        if self.low is not None and not (math.isfinite(value) and self.low <= value <= self.high):
            raise NodeParameterError(
                f"parameter {self.name} = {_number(value)} {self.unit} is outside {self.range_text()}"
            )
        if self.choices and value not in self.choices:
            raise NodeParameterError(
                f"parameter {self.name} must be one of {', '.join(self.choices)}, got {value!r}"
            )

    def range_text(self) -> str:
        """The allowed values in words: "0.001 to 60 s", "one of: simulated, canopen", or ""."""
        if self.low is not None:
            return f"{_number(self.low)} to {_number(self.high)} {self.unit}"
        if self.choices:
            return "one of: " + ", ".join(self.choices)
        return ""

    def full_description(self) -> str:
        """The description as ROS shows it (`ros2 param describe`): with the unit of a number."""
        return f"{self.description} [{self.unit}]" if self.unit else self.description


@dataclass(frozen=True)
class NodeSchema:
    """Every parameter of one node, in declaration order."""

    node: str  # the node's name
    parameters: tuple[NodeParameter, ...]

    def __post_init__(self) -> None:
        names = [p.name for p in self.parameters]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"{self.node}: parameters declared twice: {', '.join(repeated)}")

    def __getitem__(self, name: str) -> NodeParameter:
        for parameter in self.parameters:
            if parameter.name == name:
                return parameter
        raise KeyError(f"{self.node} has no parameter {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.parameters}


def descriptor_fields(parameter: NodeParameter) -> dict[str, object]:
    """The rcl_interfaces/msg/ParameterDescriptor of `parameter`, as plain fields (ROS-free):
    name, type (the ParameterType name), description, additional_constraints, read_only, and
    floating_point_range / integer_range as [(from_value, to_value, step)] (step 0: any value)."""
    fields: dict[str, object] = {
        "name": parameter.name,
        "type": parameter.type,
        "description": parameter.full_description(),
        "additional_constraints": "one of: " + ", ".join(parameter.choices) if parameter.choices else "",
        "read_only": parameter.read_only,
        "floating_point_range": [],
        "integer_range": [],
    }
    if parameter.type == "double":
        fields["floating_point_range"] = [(float(parameter.low), float(parameter.high), 0.0)]
    elif parameter.type == "integer":
        fields["integer_range"] = [(int(parameter.low), int(parameter.high), 1)]
    return fields
