"""The arthroscope's servo mode (procedures.scope_servo): entered only with the scope docked in
the portal, the stream keeps its axis through the portal, the dead-man holds, a stream while the
mode is off moves nothing. The portal distance is recomputed here from the joints' FK."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.planning.arthroscopy import load_arthroscopy
from quirobot_control.procedures.scope_servo import ScopeServoSession
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import KinematicModel, forward_kinematics

PARAMS = load_parameters()
TASK = load_arthroscopy(find_data_file("config/tasks/arthroscopy.yaml"))
MODEL = KinematicModel.from_parameters(PARAMS)
DT = 0.01  # s, the node's command period


def _portal_distance(q: np.ndarray) -> float:
    T = forward_kinematics(q, MODEL)
    origin, a = T[:3, 3], T[:3, 2]
    offset = TASK.portal - origin
    return float(np.linalg.norm(offset - (offset @ a) * a))


def test_entering_needs_the_scope_docked_in_the_portal():
    session = ScopeServoSession(TASK, PARAMS)
    assert session.enter(None, 0.0) == (False, "no joint states measured yet")
    away = session.docked_joints + np.array([0.005, 0.0, 0.0, 0.0, 0.0])  # gantry_x 5 mm off
    started, why = session.enter(away, 0.0)
    assert not started and why.startswith("the scope axis passes 5.00 mm from the portal")
    assert session.step(0.0, DT) is None and not session.active
    assert not session.receive([0.0, 0.0, 0.01], [0.0, 0.0, 0.0], 0.0) and session.ignored == 1
    started, why = session.enter(session.docked_joints, 0.0)
    assert started and why == f"servo mode on: the scope {TASK.depth * 1e3:.1f} mm past the portal"


def test_the_stream_pivots_about_the_portal_and_the_dead_man_holds():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    assert session.enter(q0, 0.0)[0]
    t, commands = 0.0, []
    for _ in range(100):  # 1 s sideways at 10 mm/s: a pivot about the portal
        session.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], t)
        commands.append(session.step(t, DT).q)
        t += DT
    moved = commands[-1]
    assert np.linalg.norm(moved[:3] - q0[:3]) > 1e-3  # the gantry moved
    assert max(_portal_distance(q) for q in commands) < 1e-9
    for _ in range(100):  # silence: past the 0.1 s timeout the servo brakes, then holds
        step = session.step(t, DT)
        t += DT
    assert step.held is not None and step.held.startswith("dead-man")
    held = step.q
    assert np.array_equal(session.step(t, DT).q, held)
    assert _portal_distance(held) < 1e-9
    assert session.leave() == (True, "servo mode off after 100 commands")
    assert session.step(t, DT) is None


def test_the_view_cone_follows_the_scope():
    session = ScopeServoSession(TASK, PARAMS)
    assert session.view_cone_markers() == []  # nothing to draw while off
    session.enter(session.docked_joints, 0.0)
    surface, rim = session.view_cone_markers()
    tip = TASK.portal + TASK.depth * TASK.direction
    apex = np.array(surface.points[0])
    assert apex == pytest.approx(tip, abs=1e-9)
    ray = np.array(rim.points[0]) - tip
    half = math.acos(ray @ TASK.direction / np.linalg.norm(ray))
    assert half == pytest.approx(PARAMS.arthroscope.field_of_view / 2)
