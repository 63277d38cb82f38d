"""Export a self-contained URDF that pinocchio, MuJoCo and PyBullet load directly."""

from __future__ import annotations

from pathlib import Path

from quirobot_description.urdf import DescriptionError, expand

EXPORT_NAME = "robot.urdf"

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

    The file needs nothing beside it: primitive shapes only, no package:// URIs, plus a
    <mujoco><compiler .../></mujoco> element so MuJoCo keeps every link. Frame links (tool0,
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
    text = document.toprettyxml(indent="  ")
    if "package://" in text:
        raise DescriptionError("the description refers to package:// resources; export cannot copy them yet")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / EXPORT_NAME
    path.write_text(text)
    return path


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
