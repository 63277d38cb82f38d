"""Export a self-contained URDF that pinocchio, MuJoCo and PyBullet load directly."""

from __future__ import annotations

import shutil
from pathlib import Path

from quirobot_description.urdf import DescriptionError, expand
from quirobot_description.visual_meshes import MESH_DIRECTORY, MESH_PREFIX

EXPORT_NAME = "robot.urdf"
#: The visual meshes go into this folder beside robot.urdf, named by relative paths.
EXPORT_MESH_FOLDER = "meshes"

#: MuJoCo's URDF importer fuses fixed links and drops visuals by default; keep every link
#: (tool0, drill_tip, camera frames) as a body and the inertias exactly as written (a link
#: without <inertial> is massless, as in URDF, not filled in from its geometry).
MUJOCO_COMPILER = {
    "discardvisual": "false",
    "fusestatic": "false",
    "balanceinertia": "false",
    "inertiafromgeom": "false",
}


def export_urdf(
    directory: str | Path,
    tool: str = "drill",
    hardware: str = "mock",
    *,
    parameter_file: str | Path | None = None,
    calibration_file: str | Path | None = None,
) -> Path:
    """Write DIRECTORY/robot.urdf (created if needed) and return its path; with `calibration_file`
    its joint-origin errors in the joint origins, as urdf.robot_description.

    The file needs nothing but the folder DIRECTORY/meshes written beside it: the visual meshes it
    draws, named by paths relative to the file (`meshes/NAME.stl`, which pinocchio, MuJoCo and
    PyBullet resolve from the URDF's folder; no package:// URI), plus a <mujoco><compiler .../>
    </mujoco> element so MuJoCo keeps every link. Collision stays primitive. Frame links (tool0,
    drill_tip, camera frames) get an explicit zero-mass <inertial>: without one PyBullet gives
    them 1 kg each.
    """
    document = expand(tool, hardware, parameter_file=parameter_file, calibration_file=calibration_file)
    robot = document.documentElement
    mujoco = document.createElement("mujoco")
    compiler = document.createElement("compiler")
    for key, value in MUJOCO_COMPILER.items():
        compiler.setAttribute(key, value)
    mujoco.appendChild(compiler)
    robot.insertBefore(mujoco, robot.firstChild)
    _give_frames_zero_mass(document)
    meshes = sorted({m.getAttribute("filename") for m in document.getElementsByTagName("mesh")})
    for mesh in document.getElementsByTagName("mesh"):
        mesh.setAttribute("filename", _exported_mesh(mesh.getAttribute("filename")))
    text = document.toprettyxml(indent="  ")
    if "package://" in text:
        raise DescriptionError("the description refers to package:// resources other than its meshes")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if meshes:
        (directory / EXPORT_MESH_FOLDER).mkdir(exist_ok=True)
    for uri in meshes:
        shutil.copyfile(MESH_DIRECTORY / uri.removeprefix(MESH_PREFIX), directory / _exported_mesh(uri))
    path = directory / EXPORT_NAME
    path.write_text(text)
    return path


def _exported_mesh(uri: str) -> str:
    """meshes/NAME.stl for the package's package://quirobot/meshes/NAME.stl."""
    if not uri.startswith(MESH_PREFIX) or "/" in uri.removeprefix(MESH_PREFIX):
        raise DescriptionError(f"the description names a mesh outside the package's meshes: {uri}")
    return f"{EXPORT_MESH_FOLDER}/{uri.removeprefix(MESH_PREFIX)}"


def _give_frames_zero_mass(document) -> None:
    """Add a zero <inertial> to every link that has none: massless frames, and a massless root,
    which PyBullet keeps static even without useFixedBase."""
    robot = document.documentElement
    links = [node for node in robot.childNodes if getattr(node, "tagName", None) == "link"]
    for link in links:
        if link.getElementsByTagName("inertial"):
            continue
        inertial = document.createElement("inertial")
        mass = document.createElement("mass")
        mass.setAttribute("value", "0")
        inertia = document.createElement("inertia")
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            inertia.setAttribute(key, "0")
        inertial.appendChild(mass)
        inertial.appendChild(inertia)
        link.appendChild(inertial)
