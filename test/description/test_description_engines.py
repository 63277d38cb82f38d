"""The exported URDF loads directly in pinocchio, MuJoCo and PyBullet and means the same in each."""

from __future__ import annotations

import math
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pinocchio as pin
import pytest

from quirobot_description.parameters import JOINT_NAMES
from quirobot_description.urdf import TOOLS

pytestmark = pytest.mark.engines

pybullet = pytest.importorskip("pybullet")


def _urdf_facts(path):
    root = ET.parse(path).getroot()
    links = [e.get("name") for e in root.findall("link")]
    movable = {e.get("name"): e for e in root.findall("joint") if e.get("type") != "fixed"}
    mass = sum(float(m.get("value")) for m in root.findall("link/inertial/mass"))
    return links, movable, mass


@pytest.mark.parametrize("tool", TOOLS)
def test_export_is_self_contained(exported_urdf_factory, tmp_path, tool):
    """robot.urdf and its meshes/ folder, moved anywhere, load with every visual mesh in each engine."""
    source = exported_urdf_factory(tool)
    alone = tmp_path / "elsewhere"
    shutil.copytree(source.parent, alone)  # the export's folder, nothing else
    path = alone / "robot.urdf"
    text = path.read_text()
    assert "package://" not in text
    meshes = {m.get("filename") for m in ET.fromstring(text).iter("mesh")}
    # the structure's three beams, the bridge, links 4 and 5, and the tool's own
    assert len(meshes) == 6 + (tool != "none")
    assert all(name.startswith("meshes/") and (alone / name).is_file() for name in meshes)
    model, _, visual = pin.buildModelsFromUrdf(str(path), str(alone))
    assert sum(g.meshPath.endswith(".stl") for g in visual.geometryObjects) == text.count("<mesh ")
    assert mujoco.MjModel.from_xml_path(str(path)).nmesh == len(meshes)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(path), useFixedBase=True, physicsClientId=client)
        shapes = pybullet.getVisualShapeData(body, physicsClientId=client)
        assert {Path(s[4].decode()).resolve() for s in shapes if s[2] == pybullet.GEOM_MESH} == {
            (alone / name).resolve() for name in meshes
        }
    finally:
        pybullet.disconnect(client)


@pytest.mark.parametrize("tool", TOOLS)
def test_mujoco_keeps_every_link_limit_damping_and_mass(exported_urdf_factory, tool):
    path = exported_urdf_factory(tool)
    links, movable, mass = _urdf_facts(path)
    model = mujoco.MjModel.from_xml_path(str(path))
    bodies = {model.body(i).name for i in range(model.nbody)}
    assert set(links) <= bodies  # fusestatic="false": tool0, drill_tip, camera frames survive
    assert sorted(model.joint(i).name for i in range(model.njnt)) == sorted(movable)
    for name, joint in movable.items():
        index = model.joint(name).id
        limit = joint.find("limit")
        assert model.jnt_limited[index]
        assert np.allclose(model.jnt_range[index], [float(limit.get("lower")), float(limit.get("upper"))])
        damping = float(joint.find("dynamics").get("damping"))
        assert model.dof_damping[model.jnt_dofadr[index]] == pytest.approx(damping)
    assert model.body_mass.sum() == pytest.approx(mass, rel=1e-12)


@pytest.mark.parametrize("tool", TOOLS)
def test_pinocchio_mass_matches(exported_urdf_factory, tool):
    path = exported_urdf_factory(tool)
    _, movable, mass = _urdf_facts(path)
    model = pin.buildModelFromUrdf(str(path))
    assert sorted(model.names[1:]) == sorted(movable)
    assert sum(i.mass for i in model.inertias) == pytest.approx(mass, rel=1e-12)


def test_pybullet_loads_with_masses_limits_and_report_pose(exported_urdf, parameters):
    _, movable, mass = _urdf_facts(exported_urdf)
    client = pybullet.connect(pybullet.DIRECT)
    try:
        body = pybullet.loadURDF(str(exported_urdf), useFixedBase=True, physicsClientId=client)
        count = pybullet.getNumJoints(body, physicsClientId=client)
        info = {pybullet.getJointInfo(body, i, physicsClientId=client)[1].decode(): i for i in range(count)}
        links = {pybullet.getJointInfo(body, i, physicsClientId=client)[12].decode(): i for i in range(count)}
        masses = [pybullet.getDynamicsInfo(body, i, physicsClientId=client)[0] for i in range(count)]
        assert sum(masses) == pytest.approx(mass, rel=1e-9)  # frames are massless, not 1 kg
        for name, joint in movable.items():
            limit = joint.find("limit")
            _, _, _, _, _, _, _, _, lower, upper, effort, velocity, *_ = pybullet.getJointInfo(
                body, info[name], physicsClientId=client
            )
            assert (lower, upper) == pytest.approx((float(limit.get("lower")), float(limit.get("upper"))))
            assert effort == pytest.approx(float(limit.get("effort")))
        q = np.array([1.1, 0.4, 0.9, 2.0, -0.5])
        for name, value in zip(JOINT_NAMES, q, strict=True):
            pybullet.resetJointState(body, info[name], value, physicsClientId=client)
        state = pybullet.getLinkState(
            body, links["tool0"], computeForwardKinematics=True, physicsClientId=client
        )
        position, quaternion = np.array(state[4]), state[5]
        rotation = np.array(pybullet.getMatrixFromQuaternion(quaternion)).reshape(3, 3)
    finally:
        pybullet.disconnect(client)
    d1, d2, d3, t4, t5 = q
    l4, l5 = parameters.l4, parameters.l5
    c4, s4, c5, s5 = math.cos(t4), math.sin(t4), math.cos(t5), math.sin(t5)
    # the report's closed form T (quirobot-report.md)
    expected = np.array([[s4, c4 * s5, c4 * c5], [c4, -s4 * s5, -s4 * c5], [0.0, c5, -s5]])
    assert np.allclose(position, [d1 + l5 * c4 * c5, d2 - l5 * s4 * c5, -d3 - l4 - l5 * s5], atol=1e-6)
    assert np.allclose(rotation, expected, atol=1e-6)


def test_pybullet_keeps_the_ceiling_mount_static_without_fixed_base_flag(exported_urdf):
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.setGravity(0, 0, -9.81, physicsClientId=client)
        body = pybullet.loadURDF(str(exported_urdf), physicsClientId=client)  # no useFixedBase
        for _ in range(240):
            pybullet.stepSimulation(physicsClientId=client)
        position, _ = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)
    finally:
        pybullet.disconnect(client)
    assert np.allclose(position, 0.0, atol=1e-12)
