"""QUIROBOT's description: the parameter file (every number with its source), the URDF, its check.

`robot_parameters()` is the shipped parameter file, read and validated once; give another file's
path to use that one instead. The other packages' conveniences (quirobot_kinematics.fk,
quirobot_control.simulate, ...) take their numbers from it.

Modules (the bottom package: it imports none of the others):

- parameters: `load_parameters`, `RobotParameters`, gathering each section's dataclasses and
  reader: mechanism_parameters (motors, transmissions, joints, links), tool_parameters (the
  drill, whose feed is a `JointParameters`, the arthroscope, `axes_for(tool)`: the five joints
  then the tool's own axes), drive_parameters (drives, homing, CANopen); joint_names: the joint,
  link and feed names, declared once; file_schema: the schema of every file a user writes;
  sourced_yaml: the one {value, unit, source} reader; shown_numbers: how a refusal writes its
  numbers (short; a value never reads as its bound);
- data_files: `find_data_file`, in a source checkout, a pip install and a colcon install alike;
- urdf: `robot_description(tool, hardware)`, the xacro expanded; export: a self-contained URDF
  for other engines; frames, inertia: URDF roll-pitch-yaw, solid-body inertias;
- visual_meshes: the STL visual meshes (meshes/) made from the parameter file (mesh_parameters:
  their own dimensions);
- validation: `check_urdf(text, params, reference_fk=...)`, the staged check (the reference
  kinematics passed in; its stages in urdf_elements, validation_model, validation_engines,
  validation_ros2_control); render: a PNG of the robot;
- launch_description: the `robot_description` parameter of a launch file (a ROS adapter: launch
  imported inside it only).
"""

from __future__ import annotations

import functools
from pathlib import Path

__all__ = ["robot_parameters"]


def robot_parameters(parameter_file: str | Path | None = None):
    """RobotParameters of `parameter_file` (default: the shipped one).

    Read once per version of the file (edited on disk, it is read again); the object is shared,
    so treat it as read-only. A missing or malformed file raises ParameterError (a ValueError).
    """
    from quirobot_description.parameters import DEFAULT_PARAMETER_FILE

    path = Path(parameter_file if parameter_file is not None else DEFAULT_PARAMETER_FILE).resolve()
    try:
        version = path.stat().st_mtime_ns
    except OSError:
        version = None  # load_parameters names the problem
    return _load(str(path), version)


@functools.lru_cache(maxsize=8)
def _load(path: str, version: int | None):
    from quirobot_description.parameters import load_parameters

    return load_parameters(path)
