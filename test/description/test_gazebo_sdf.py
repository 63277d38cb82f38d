"""Gazebo's own URDF-to-SDF converter keeps the whole robot (hardware:=gazebo, every tool).

Gazebo spawns a URDF through sdformat's converter (parser_urdf.cc), run here as `gz sdf -p`
(Gazebo Harmonic) or `ign sdf -p` (Debian 12's ignition-tools + libsdformat-dev, sdformat 12).
The converter drops a link without mass with everything below it, and lumps a link joined by a
fixed joint (except to `world`) into its parent, re-parenting the joints below it. So the SDF
must hold every URDF link that is not lumped, every joint to such a link with its parent moved
up past lumped links, the whole mass, and nothing on stderr. Skips when no converter is found.

sdformat before 13 also stops below a massless link even when its fixed joint is lumped; the
description keeps every tool beside the frame-only tool0, not below it, so that every converter
(Debian's sdformat 12 here, Harmonic's 14) keeps the drill's feed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from quirobot_description.inertia import inertia_problems
from quirobot_description.parameters import axes_for
from quirobot_description.urdf import TOOLS, robot_description

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.engines

#: (executable, verb): Gazebo Harmonic's CLI, then the Ignition one of Debian 12's packages.
CONVERTERS = (("gz", "sdf"), ("ign", "sdf"))
#: What Debian's ignition-tools 1.4 prints on every run (its optional backtrace library is not
#: packaged); any other stderr line is a converter warning or error and fails the test.
TOOL_NOISE = (
    "Library error: libignition-tools-backward.so not found. Improved backtrace generation will be disabled"
)


@dataclass(frozen=True)
class Converter:
    command: tuple[str, ...]  # e.g. ("/usr/bin/ign", "sdf")
    major: int  # sdformat major version


@pytest.fixture(scope="module")
def converter() -> Converter:
    for executable, verb in CONVERTERS:
        path = shutil.which(executable)
        if path is None:
            continue
        result = subprocess.run([path, verb, "--versions"], capture_output=True, text=True, timeout=60)
        versions = re.findall(r"^(\d+)\.\d+\.\d+$", result.stdout, flags=re.MULTILINE)
        if result.returncode == 0 and versions:
            return Converter((path, verb), max(int(v) for v in versions))
    pytest.skip(
        "no Gazebo URDF-to-SDF converter (gz sdf, or ign sdf: apt-get install ignition-tools libsdformat-dev)"
    )


@dataclass(frozen=True)
class Urdf:
    """The URDF's tree: link -> mass (kg, 0 without <inertial>), joint -> (type, parent, child)."""

    masses: dict[str, float]
    joints: dict[str, tuple[str, str, str]]

    def parent_joint(self, link: str) -> str | None:
        return next((name for name, (_, _, child) in self.joints.items() if child == link), None)

    def lumped(self, link: str) -> bool:
        """Merged into its parent by the converter: a fixed joint from a link other than world."""
        joint = self.parent_joint(link)
        return joint is not None and self.joints[joint][0] == "fixed" and self.joints[joint][1] != "world"

    def body(self, link: str) -> str:
        """The SDF link that carries `link` (itself, or the ancestor it is lumped into)."""
        while self.lumped(link):
            link = self.joints[self.parent_joint(link)][1]
        return link


def _urdf(text: str) -> Urdf:
    root = ET.fromstring(text)
    masses = {
        link.get("name"): float(link.find("inertial/mass").get("value"))
        if link.find("inertial") is not None
        else 0.0
        for link in root.findall("link")
    }
    joints = {
        joint.get("name"): (
            joint.get("type"),
            joint.find("parent").get("link"),
            joint.find("child").get("link"),
        )
        for joint in root.findall("joint")
    }
    return Urdf(masses, joints)


@dataclass(frozen=True)
class Conversion:
    model: ET.Element
    stderr: list[str]  # lines other than TOOL_NOISE


def _convert(converter: Converter, text: str, path: Path) -> Conversion:
    path.write_text(text)
    result = subprocess.run(
        [*converter.command, "-p", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    model = ET.fromstring(result.stdout).find("model")
    assert model is not None, result.stdout
    stderr = [line for line in result.stderr.splitlines() if line.strip() and line.strip() != TOOL_NOISE]
    return Conversion(model, stderr)


def _sdf_inertial(link: ET.Element) -> tuple[float, np.ndarray]:
    """(mass kg, inertia (3, 3) kg*m^2 about the centre of mass) of an SDF <link>."""
    inertial = link.find("inertial")
    i = {
        key: float(inertial.findtext(f"inertia/{key}", "0"))
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    tensor = np.array(
        [[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]]
    )
    return float(inertial.findtext("mass")), tensor


@pytest.mark.parametrize("tool", TOOLS)
def test_gazebo_conversion_keeps_every_link_and_joint(converter, tmp_path, tool):
    text = robot_description(tool, "gazebo")
    urdf = _urdf(text)
    sdf = _convert(converter, text, tmp_path / f"quirobot_{tool}.urdf")
    assert sdf.stderr == [], "\n".join(sdf.stderr)

    links = {link.get("name"): link for link in sdf.model.findall("link")}
    joints = {
        j.get("name"): (j.get("type"), j.findtext("parent"), j.findtext("child"))
        for j in sdf.model.findall("joint")
    }
    kept = [name for name in urdf.masses if name != "world" and not urdf.lumped(name)]
    expected_joints = {
        name: (kind, parent if parent == "world" else urdf.body(parent), child)
        for name, (kind, parent, child) in urdf.joints.items()
        if not urdf.lumped(child)
    }
    # the robot hangs from the Gazebo world (the URDF root `world` is the world itself)
    assert expected_joints["world_joint"] == ("fixed", "world", "base_link")
    lost = [f"link {n}" for n in kept if n not in links]
    lost += [f"joint {n} {j}" for n, j in expected_joints.items() if joints.get(n) != j]
    # every kilogram arrives, a lumped link's in the link that carries it
    for name in kept:
        parts = [link for link in urdf.masses if link != "world" and urdf.body(link) == name]
        mass = sum(urdf.masses[link] for link in parts)
        if name in links and float(links[name].findtext("inertial/mass")) != pytest.approx(mass, rel=1e-12):
            lost.append(f"mass of {name}: {links[name].findtext('inertial/mass')} kg, URDF {mass} kg")
    assert set(links) <= set(kept), (
        f"links Gazebo has that the URDF does not: {sorted(set(links) - set(kept))}"
    )
    assert set(joints) <= set(expected_joints), (
        f"unexpected joints {sorted(set(joints) - set(expected_joints))}"
    )

    # every link Gazebo keeps has a positive mass and a physical inertia (the converter's own
    # sums for lumped links included): positive principal moments, triangle inequality
    for name, link in links.items():
        mass, inertia = _sdf_inertial(link)
        assert mass > 0.0, f"{name}: mass {mass} kg"
        assert inertia_problems(inertia) == [], f"{name}: {inertia_problems(inertia)}"

    # frame-only links (tool0, drill_tip, camera frames) are lumped, never massless SDF links;
    # sdformat 13+ keeps them as //model/frame, sdformat 12 leaves them out (their TF comes from
    # robot_state_publisher, not from Gazebo)
    frames = {frame.get("name") for frame in sdf.model.findall("frame")}
    lumped = {name for name in urdf.masses if urdf.lumped(name)}
    assert not lumped & set(links)
    if frames:
        assert lumped <= frames, f"lumped links without a frame: {sorted(lumped - frames)}"

    assert not lost, f"sdformat {converter.major}'s conversion lost: {lost}"


def test_gz_ros2_control_plugin_reaches_the_model(converter, tmp_path):
    """The <gazebo> block becomes the model's plugin, with the controllers file Gazebo loads."""
    sdf = _convert(converter, robot_description("none", "gazebo"), tmp_path / "quirobot.urdf")
    plugins = [p for p in sdf.model.findall("plugin") if p.get("filename") == "gz_ros2_control-system"]
    assert len(plugins) == 1
    assert plugins[0].get("name") == "gz_ros2_control::GazeboSimROS2ControlPlugin"
    controllers = Path(plugins[0].findtext("parameters"))
    assert controllers.name == "controllers_gazebo.yaml" and controllers.is_file()


def test_gazebo_joints_may_run_at_their_drives_top_speed(converter, tmp_path, parameters):
    """In the SDF that DART gets, each axis's velocity limit is its drive's top speed (the motor's
    max_speed over the transmission ratio), above the design limit the plans cruise at: DART
    holds a joint to its SDF limit, so gz_ros2_control's position loop needs that headroom to
    make up a lag behind its reference (docs/gazebo.md). The other hardware keeps the design
    limit."""
    gazebo = _convert(converter, robot_description("drill", "gazebo"), tmp_path / "quirobot.urdf")
    limits = {
        j.get("name"): float(j.findtext("axis/limit/velocity"))
        for j in gazebo.model.findall("joint")
        if j.find("axis/limit/velocity") is not None
    }
    mock = {
        j.get("name"): float(j.find("limit").get("velocity"))
        for j in ET.fromstring(robot_description("drill", "mock")).findall("joint")
        if j.find("limit") is not None
    }
    for axis in axes_for("drill"):
        source = parameters.axis(axis)
        top = source.motor.max_speed / source.transmission.ratio
        assert limits[axis] == pytest.approx(top, rel=1e-12), axis
        assert limits[axis] > 1.5 * source.velocity, f"{axis}: {limits[axis]} against {source.velocity}"
        assert mock[axis] == source.velocity, axis


def test_gazebo_finds_the_visual_meshes_in_the_package_share(converter, tmp_path):
    """The converter turns package://quirobot/meshes/NAME.stl into model://quirobot/meshes/NAME.stl,
    which Gazebo looks up in the model paths ros_gz_sim collects from package.xml's export
    (${prefix}/../: share/, so model://quirobot is share/quirobot, where the meshes are installed)."""
    sdf = _convert(converter, robot_description("drill", "gazebo"), tmp_path / "quirobot.urdf")
    uris = [uri.text for uri in sdf.model.iter("uri") if uri.text.endswith(".stl")]
    assert len(uris) == 16  # 12 beams, bridge, links 4 and 5, drill: every visual mesh
    meshes = ROOT / "quirobot_description" / "meshes"
    for uri in uris:
        assert uri.startswith("model://quirobot/meshes/") and (meshes / uri.rsplit("/", 1)[1]).is_file(), uri
    export = ET.parse(ROOT / "package.xml").getroot().find("export/gazebo_ros")
    assert export.get("gazebo_model_path") == "${prefix}/../"
    # collision stays primitive
    assert not [c for c in sdf.model.iter("collision") if c.find("geometry/mesh") is not None]
