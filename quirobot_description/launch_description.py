"""The `robot_description` parameter of a launch file: the xacro description, expanded at launch.

    robot_description_parameter(tool=LaunchConfiguration("tool"), hardware="gazebo")

is `ParameterValue(Command([xacro, " ", <share>/urdf/quirobot.urdf.xacro, " tool:=", tool,
" hardware:=", "gazebo"]), value_type=str)` (value_type=str: without it robot_state_publisher
would get the XML parsed as YAML). One builder for every launch file, so the xacro path and the
argument syntax live in one place.

`checked_calibration("calibration")` is the launch files' check of a calibration file argument
(sim.launch.py, bringup.launch.py): at launch, before any node starts, the file is read as every
consumer reads it (`geometric_errors.read_calibration`: schema, units, each value within its
tolerance band) and the argument becomes its absolute path (xacro would read a relative one from
the xacro's folder, the nodes from their working directory); a bad file ends the launch with one
line naming the file and the problem, and nothing starts.

ROS's launch packages are imported inside `robot_description_parameter` and `checked_calibration`
only: this module imports (and `xacro_argument_parts` is tested) where ROS is absent.
"""

from __future__ import annotations

from pathlib import Path

from quirobot_description import robot_parameters
from quirobot_description.geometric_errors import CalibrationFileError, read_calibration
from quirobot_description.urdf import HARDWARE, PACKAGE, TOOLS, DescriptionError, check_choice

#: The xacro arguments of quirobot.urdf.xacro (see its header).
XACRO_ARGUMENTS = ("tool", "hardware", "parameter_file", "controllers_file", "calibration_file")
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


def calibration_path(value: str, argument: str = "calibration") -> str:
    """The launch argument `argument`'s calibration file as an absolute path, read and checked
    (`read_calibration`); "" for "" (the nominal model). CalibrationFileError, one line naming the
    argument, the file and the problem."""
    if not value:
        return ""
    path = Path(value).expanduser().resolve()
    try:
        read_calibration(path, robot_parameters().geometric)
    except CalibrationFileError as error:
        raise CalibrationFileError(f"launch argument {argument}: {' '.join(str(error).split())}") from None
    return str(path)


def checked_calibration(argument: str = "calibration"):
    """An OpaqueFunction that checks the launch argument `argument` (module docstring) and sets it
    to the file's absolute path. Put it before the nodes that use the argument: the launch visits
    it first, so a bad file ends the launch before anything starts."""
    from launch.actions import OpaqueFunction, SetLaunchConfiguration
    from launch.substitutions import LaunchConfiguration

    def check(context):
        value = LaunchConfiguration(argument).perform(context)
        return [SetLaunchConfiguration(argument, calibration_path(value, argument))]

    return OpaqueFunction(function=check)
