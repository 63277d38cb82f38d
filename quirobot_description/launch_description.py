"""The `robot_description` parameter of a launch file: the xacro description, expanded at launch.

    robot_description_parameter(tool=LaunchConfiguration("tool"), hardware="gazebo")

is `ParameterValue(Command([xacro, " ", <share>/urdf/quirobot.urdf.xacro, " tool:=", tool,
" hardware:=", "gazebo"]), value_type=str)` (value_type=str: without it robot_state_publisher
would get the XML parsed as YAML). One builder for every launch file, so the xacro path and the
argument syntax live in one place.

ROS's launch packages are imported inside `robot_description_parameter` only: this module
imports (and `xacro_argument_parts` is tested) where ROS is absent.
"""

from __future__ import annotations

from quirobot_description.urdf import HARDWARE, PACKAGE, TOOLS, DescriptionError, check_choice

#: The xacro arguments of quirobot.urdf.xacro (see its header).
XACRO_ARGUMENTS = ("tool", "hardware", "parameter_file", "controllers_file")
#: Allowed literal values of the xacro arguments that have a fixed set of choices.
CHOICES = {"tool": TOOLS, "hardware": HARDWARE}


def xacro_argument_parts(**arguments: object) -> list[object]:
    """The xacro command line's argument parts: [" name:=", value, ...] in the order given.

    A value is a literal str or a launch substitution (e.g. LaunchConfiguration). Unknown
    argument names and literal values outside TOOLS / HARDWARE raise DescriptionError.
    """
    parts: list[object] = []
    for name, value in arguments.items():
        if name not in XACRO_ARGUMENTS:
            raise DescriptionError(
                f"unknown xacro argument {name!r}; quirobot.urdf.xacro takes {', '.join(XACRO_ARGUMENTS)}"
            )
        if isinstance(value, str):
            if name in CHOICES:
                check_choice(name, value, CHOICES[name])
            if not value or any(c.isspace() for c in value):
                raise DescriptionError(f"xacro argument {name} must be one word, got {value!r}")
        parts += [f" {name}:=", value]
    return parts


def robot_description_parameter(**arguments: object):
    """ParameterValue of the expanded description for robot_state_publisher (see the module doc).

    arguments: xacro arguments (XACRO_ARGUMENTS), literal strings or launch substitutions.
    Needs ROS 2's launch and launch_ros (imported here, not at module level).
    """
    from launch.substitutions import Command, FindExecutable, PathJoinSubstitution
    from launch_ros.parameter_descriptions import ParameterValue
    from launch_ros.substitutions import FindPackageShare

    share = FindPackageShare(PACKAGE)
    xacro_file = PathJoinSubstitution([share, "urdf", "quirobot.urdf.xacro"])
    command = [FindExecutable(name="xacro"), " ", xacro_file, *xacro_argument_parts(**arguments)]
    return ParameterValue(Command(command), value_type=str)
