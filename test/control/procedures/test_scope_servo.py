"""The arthroscope's servo mode (procedures.scope_servo): entered only with the scope docked in
the portal and from the measured joints, the stream keeps its axis through the portal, the
dead-man holds, leaving holds the last command, a stream while the mode is off moves nothing, a
scope measured off the portal is a fault that holds; every (state, event) pair of its table. The
portal distance is recomputed here from the joints' FK."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.planning.arthroscopy import load_arthroscopy
from quirobot_control.procedures.scope_servo import ScopeServoSession
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import ApproachTarget, KinematicModel, forward_kinematics, inverse_kinematics

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


def _streamed(session: ScopeServoSession, t: float, cycles: int) -> tuple[float, np.ndarray]:
    """`cycles` commands of 10 mm/s sideways (a pivot about the portal); (time s, last command)."""
    for _ in range(cycles):
        session.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], t)
        q = session.step(t, DT).q
        t += DT
    return t, q


def test_entering_starts_from_the_measured_joints():
    session = ScopeServoSession(TASK, PARAMS)
    # A scope docked by hand: tilted 5 degrees from the task's direction about the portal, the tip
    # 30 mm past it, and 0.3 mm off the portal (within the trocar's tolerance).
    tilt = math.radians(5.0)
    side = np.cross(TASK.direction, [0.0, 1.0, 0.0])
    a = math.cos(tilt) * TASK.direction + math.sin(tilt) * side / np.linalg.norm(side)
    tool0 = TASK.portal + (0.03 - PARAMS.arthroscope.scope_length) * a
    measured = inverse_kinematics(ApproachTarget(tool0, a), MODEL, seed=session.docked_joints)
    measured = measured + np.array([0.0003, 0.0, 0.0, 0.0, 0.0])
    assert 1e-4 < _portal_distance(measured) < session.dock_tolerance
    assert session.enter(measured, 0.0) == (True, "servo mode on: the scope 30.0 mm past the portal")
    first = session.step(0.0, DT).q  # no command yet: it stands where it entered
    assert _portal_distance(first) < 1e-9  # re-solved through the portal
    T = forward_kinematics(first, MODEL)
    assert math.acos(min(1.0, T[:3, 2] @ a)) < 1e-3  # the measured direction, not the task's
    assert np.linalg.norm(first[:3] - measured[:3]) < 1e-3


def test_leaving_holds_the_last_command_and_a_twist_after_it_does_nothing():
    session = ScopeServoSession(TASK, PARAMS)
    session.enter(session.docked_joints, 0.0)
    t, last = _streamed(session, 0.0, 50)
    assert session.leave() == (True, "servo mode off after 50 commands")
    assert np.array_equal(session.hold, last) and _portal_distance(session.hold) < 1e-9
    assert not session.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], t)
    assert session.ignored == 1 and session.why_off == "the servo mode is off"
    assert session.step(t, DT) is None and session.view_cone_markers() == []


def test_a_twist_sent_before_entering_does_not_move_the_scope_after():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    for i in range(5):  # a stream while off, fresh (within the dead-man timeout) at entry
        assert not session.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], i * DT)
    session.enter(q0, 5 * DT)
    steps = [session.step(5 * DT + i * DT, DT) for i in range(1, 20)]
    assert all(np.allclose(step.q, q0, atol=1e-12) for step in steps)


def test_a_scope_measured_off_the_portal_is_a_fault_that_holds():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    session.enter(q0, 0.0)
    t, last = _streamed(session, 0.0, 30)
    assert session.measure(last) is None and session.active  # on the portal: no fault
    knee_moved = last + np.array([0.0, 0.002, 0.0, 0.0, 0.0])  # gantry_y 2 mm away
    fault = session.measure(knee_moved)
    off = _portal_distance(knee_moved)  # the test's own FK
    assert off > session.dock_tolerance
    expected = f"the measured scope axis passes {off * 1e3:.2f} mm from the portal (at most 1.00 mm)"
    assert fault == expected
    assert not session.active and np.array_equal(session.hold, last)
    assert not session.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], t)
    assert session.why_off == f"the servo mode left on a fault: {fault}"
    assert session.enter(q0, t)[0] and session.fault is None  # docked again: it may re-enter


# Every (state, event) pair of the module's table: (event, state after, a command comes out).
OFF_PORTAL = np.array([0.005, 0.0, 0.0, 0.0, 0.0])
EVENTS = {
    "enter docked": lambda s, q: s.enter(q, 0.0),
    "enter off the portal": lambda s, q: s.enter(q + OFF_PORTAL, 0.0),
    "enter unmeasured": lambda s, q: s.enter(None, 0.0),
    "leave": lambda s, q: s.leave(),
    "twist": lambda s, q: s.receive([0.01, 0.0, 0.0], [0.0, 0.0, 0.0], 0.0),
    "measure docked": lambda s, q: s.measure(q),
    "measure off the portal": lambda s, q: s.measure(q + OFF_PORTAL),
}
TABLE = {
    ("off", "enter docked"): "on",
    ("off", "enter off the portal"): "off",
    ("off", "enter unmeasured"): "off",
    ("off", "leave"): "off",
    ("off", "twist"): "off",
    ("off", "measure docked"): "off",
    ("off", "measure off the portal"): "off",
    ("on", "enter docked"): "on",
    ("on", "enter off the portal"): "on",  # already on: the running servo is kept
    ("on", "enter unmeasured"): "on",
    ("on", "leave"): "off",
    ("on", "twist"): "on",
    ("on", "measure docked"): "on",
    ("on", "measure off the portal"): "off",
}


@pytest.mark.parametrize(("state", "event"), sorted(TABLE))
def test_every_state_and_event(state, event):
    assert set(EVENTS) == {e for _, e in TABLE}
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    if state == "on":
        session.enter(q0, 0.0)
    EVENTS[event](session, q0)
    expected = TABLE[(state, event)]
    assert ("on" if session.active else "off") == expected
    assert (session.step(0.0, DT) is not None) == (expected == "on")
