"""Expand the robot's xacro description into URDF XML, in-process (no ROS needed).

The xacro files (urdf/, see data_files.py) read every number from the parameter file through a
path relative to themselves; `robot_description` validates the parameter file with
`load_parameters` first, so a malformed file fails with a one-line `ParameterError` instead of
a xacro traceback.

Visual meshes (visual_meshes.py) are files made from the shipped parameter file: a parameter file
whose mesh dimensions differ (`MeshDimensions`) gets the primitives as visuals instead (xacro arg
meshes:=false), so that what is drawn is never another machine's part.
"""

from __future__ import annotations

import functools
import xml.dom.minidom
from pathlib import Path

import xacro

from quirobot_description.data_files import DataFileNotFoundError, find_data_file
from quirobot_description.geometric_errors import read_calibration
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, RobotParameters, load_parameters
from quirobot_description.visual_meshes import MeshDimensions

#: Tools the description can mount on tool0 (xacro arg `tool`).
TOOLS = ("drill", "arthroscope", "none")
#: ros2_control hardware back-ends (xacro arg `hardware`).
HARDWARE = ("mock", "gazebo", "real")

PACKAGE = "quirobot"
XACRO_FILE = find_data_file("urdf/quirobot.urdf.xacro")
URDF_DIRECTORY = XACRO_FILE.parent


class DescriptionError(ValueError):
    """A bad description request (unknown tool or hardware) or a xacro expansion failure."""


def check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    """Raise DescriptionError unless `value` is one of `allowed`."""
    if value not in allowed:
        raise DescriptionError(f"unknown {name} {value!r}; choose one of {', '.join(allowed)}")


def default_controllers_file() -> Path | None:
    """The controllers YAML for gz_ros2_control (config/controllers_gazebo.yaml, see data_files);
    None when no place holds it (the xacro's own default then names ../config/controllers_gazebo.yaml
    relative to the xacro file, right in share/quirobot/urdf)."""
    try:
        return find_data_file("config/controllers_gazebo.yaml")
    except DataFileNotFoundError:
        return None


def expand(
    tool: str = "drill",
    hardware: str = "mock",
    *,
    parameter_file: str | Path | None = None,
    controllers_file: str | Path | None = None,
    calibration_file: str | Path | None = None,
    meshes: bool = True,
) -> xml.dom.minidom.Document:
    """Run xacro on the description; return the expanded URDF document (see robot_description)."""
    check_choice("tool", tool, TOOLS)
    check_choice("hardware", hardware, HARDWARE)
    parameters_path = Path(parameter_file).resolve() if parameter_file is not None else DEFAULT_PARAMETER_FILE
    if controllers_file is None:
        controllers_file = default_controllers_file()
    mappings = (
        ("tool", tool),
        ("hardware", hardware),
        ("parameter_file", str(parameters_path)),
        ("controllers_file", str(Path(controllers_file).resolve()) if controllers_file is not None else ""),
        ("calibration_file", str(Path(calibration_file).resolve()) if calibration_file is not None else ""),
        ("meshes", "true" if meshes else "false"),
    )
    contents = tuple(
        _contents(Path(value)) if value else None for name, value in mappings if name.endswith("file")
    )
    return xml.dom.minidom.parseString(_expanded(mappings, contents))


def _contents(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None  # the reader below names the missing file


@functools.lru_cache(maxsize=16)
def _expanded(mappings: tuple[tuple[str, str], ...], contents: tuple[bytes | None, ...]) -> str:
    """The xacro expansion as text, cached: the same arguments and file contents (`contents`, part
    of the key, so an edited file expands anew) give the same URDF. A closed-loop simulation
    expands the description twice, about a second of each Monte-Carlo sample before the cache."""
    arguments = dict(mappings)
    # A malformed file fails here, named (contents[0]: the parameter file's, the cache key).
    parameters = _parameters(arguments["parameter_file"], contents[0])
    if MeshDimensions.from_parameters(parameters) != _shipped_mesh_dimensions():
        arguments["meshes"] = "false"  # the shipped meshes are not this machine's parts
    if arguments["calibration_file"]:
        read_calibration(arguments["calibration_file"], parameters.geometric)  # likewise, and in its bands
    try:
        return xacro.process_file(str(XACRO_FILE), mappings=arguments).toxml()
    except xacro.XacroException as error:
        message = " ".join(str(error).split())
        raise DescriptionError(f"xacro failed on {XACRO_FILE.name}: {message}") from error


@functools.lru_cache(maxsize=1)
def _shipped_mesh_dimensions() -> MeshDimensions:
    """What the shipped meshes were made from (the shipped parameter file)."""
    path = DEFAULT_PARAMETER_FILE
    return MeshDimensions.from_parameters(_parameters(str(path), _contents(path)))


@functools.lru_cache(maxsize=4)
def _parameters(path: str, contents: bytes | None) -> RobotParameters:
    """load_parameters(path), cached as the expansions are (`contents`, the file's bytes, part of
    the key): the drill's mock and real descriptions and the shipped meshes' check read the same
    file, ~0.2 s a parse. Only read here (checks and mesh dimensions), never handed out."""
    del contents  # only the cache key
    return load_parameters(path)


def clear_expansion_cache() -> None:
    """Forget the cached expansions (bench/accuracy.py times a sample with and without them)."""
    _expanded.cache_clear()
    _parameters.cache_clear()


def robot_description(
    tool: str = "drill",
    hardware: str = "mock",
    *,
    package_uris: bool = True,
    parameter_file: str | Path | None = None,
    controllers_file: str | Path | None = None,
    calibration_file: str | Path | None = None,
    meshes: bool = True,
) -> str:
    """The expanded URDF XML of QUIROBOT.

    tool: one of TOOLS; hardware: one of HARDWARE (the ros2_control plugin).
    package_uris: keep the visual meshes' `package://quirobot/meshes/...` URIs as ROS expects
    (True), or turn them into absolute paths of the files beside the xacro's folder (False: the
    package's own meshes/, wherever it is installed, for tools without a ROS package path).
    parameter_file: the parameter YAML (default: the one shipped with the package).
    controllers_file: the controllers YAML named in the gz_ros2_control block (hardware=gazebo).
    calibration_file: a calibration file (`quirobot calibrate --output`) whose joint-origin errors
    go into the joint <origin>s and gantry <axis>es (straightness has no URDF form; left out).
    meshes: draw the visual meshes (True; only when the parameter file's mesh dimensions are the
    shipped file's, see the module docstring) or every visual as its collision primitive (False).
    Raises DescriptionError (a ValueError) for an unknown tool or hardware, ParameterError for a
    malformed parameter file.
    """
    document = expand(
        tool,
        hardware,
        parameter_file=parameter_file,
        controllers_file=controllers_file,
        calibration_file=calibration_file,
        meshes=meshes,
    )
    text = document.toprettyxml(indent="  ")
    if not package_uris:
        text = text.replace(f"package://{PACKAGE}/", f"{URDF_DIRECTORY.parent}/")
    return text
