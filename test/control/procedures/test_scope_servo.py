"""The arthroscope's servo mode (procedures.scope_servo): entered only with the scope docked in
the portal and from fresh measured joints, the stream keeps its axis through the portal, the
dead-man holds, leaving holds the last command, a stream while the mode is off moves nothing, a
scope measured off the portal is a fault that holds, stale or foreign-frame twists are refused
and logged once per kind, stale joint states stop the servo; every (state, event) pair of its
table. The portal distance is recomputed here from the joints' FK."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.planning.arthroscopy import load_arthroscopy
from quirobot_control.procedures.scope_servo import (
    RefusalLog,
    ScopeServoSession,
    TwistRefusal,
    check_command_period,
)
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import ApproachTarget, KinematicModel, forward_kinematics, inverse_kinematics

PARAMS = load_parameters()
TASK = load_arthroscopy(find_data_file("config/tasks/arthroscopy.yaml"))
MODEL = KinematicModel.from_parameters(PARAMS)
DT = 0.01  # s, the node's command period


def _measure(session: ScopeServoSession, q: np.ndarray, t: float) -> str | None:
    """Joint states q (5,) measured and received at t (s)."""
    return session.measure(q, t, t)


def _enter(session: ScopeServoSession, q: np.ndarray | None = None, t: float = 0.0) -> tuple[bool, str]:
    """Enter at t (s) on states q (5,) (default: docked) measured then."""
    _measure(session, session.docked_joints if q is None else q, t)
    return session.enter(t)


def _send(session: ScopeServoSession, linear, t: float, stamp: float | None = None, frame: str = "world"):
    """A twist of `linear` (m/s), no rotation, received at t, stamped `stamp` (default t)."""
    return session.receive(linear, [0.0, 0.0, 0.0], t, t if stamp is None else stamp, frame)


def _portal_distance(q: np.ndarray) -> float:
    T = forward_kinematics(q, MODEL)
    origin, a = T[:3, 3], T[:3, 2]
    offset = TASK.portal - origin
    return float(np.linalg.norm(offset - (offset @ a) * a))


def test_entering_needs_the_scope_docked_in_the_portal():
    session = ScopeServoSession(TASK, PARAMS)
    assert session.enter(0.0) == (False, "no joint states measured yet")
    away = session.docked_joints + np.array([0.005, 0.0, 0.0, 0.0, 0.0])  # gantry_x 5 mm off
    started, why = _enter(session, away)
    assert not started and why.startswith("the scope axis passes 5.00 mm from the portal")
    assert session.step(0.0, DT) is None and not session.active
    assert _send(session, [0.0, 0.0, 0.01], 0.0) == TwistRefusal("off", "the servo mode is off")
    assert session.ignored == 1
    started, why = _enter(session)
    assert started and why == f"servo mode on: the scope {TASK.depth * 1e3:.1f} mm past the portal"


def test_the_stream_pivots_about_the_portal_and_the_dead_man_holds():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    assert _enter(session)[0]
    t, commands = 0.0, []
    for _ in range(100):  # 1 s sideways at 10 mm/s: a pivot about the portal
        assert _send(session, [0.01, 0.0, 0.0], t) is None
        _measure(session, commands[-1] if commands else q0, t)
        commands.append(session.step(t, DT).q)
        t += DT
    moved = commands[-1]
    assert np.linalg.norm(moved[:3] - q0[:3]) > 1e-3  # the gantry moved
    assert max(_portal_distance(q) for q in commands) < 1e-9
    for _ in range(100):  # silence: past the 0.1 s timeout the servo brakes, then holds
        _measure(session, commands[-1], t)
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
    _enter(session)
    surface, rim = session.view_cone_markers()
    tip = TASK.portal + TASK.depth * TASK.direction
    apex = np.array(surface.points[0])
    assert apex == pytest.approx(tip, abs=1e-9)
    ray = np.array(rim.points[0]) - tip
    half = math.acos(ray @ TASK.direction / np.linalg.norm(ray))
    assert half == pytest.approx(PARAMS.arthroscope.field_of_view / 2)


def _streamed(session: ScopeServoSession, t: float, cycles: int) -> tuple[float, np.ndarray]:
    """`cycles` commands of 10 mm/s sideways (a pivot about the portal); (time s, last command)."""
    q = session.servo.q
    for _ in range(cycles):
        _send(session, [0.01, 0.0, 0.0], t)
        _measure(session, q, t)
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
    assert _enter(session, measured) == (True, "servo mode on: the scope 30.0 mm past the portal")
    first = session.step(0.0, DT).q  # no command yet: it stands where it entered
    assert _portal_distance(first) < 1e-9  # re-solved through the portal
    T = forward_kinematics(first, MODEL)
    assert math.acos(min(1.0, T[:3, 2] @ a)) < 1e-3  # the measured direction, not the task's
    assert np.linalg.norm(first[:3] - measured[:3]) < 1e-3


def test_leaving_holds_the_last_command_and_a_twist_after_it_does_nothing():
    session = ScopeServoSession(TASK, PARAMS)
    _enter(session)
    t, last = _streamed(session, 0.0, 50)
    assert session.leave() == (True, "servo mode off after 50 commands")
    assert np.array_equal(session.hold, last) and _portal_distance(session.hold) < 1e-9
    assert _send(session, [0.01, 0.0, 0.0], t).kind == "off"
    assert session.ignored == 1 and session.why_off == "the servo mode is off"
    assert session.step(t, DT) is None and session.view_cone_markers() == []


def test_a_twist_sent_before_entering_does_not_move_the_scope_after():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    for i in range(5):  # a stream while off, fresh (within the dead-man timeout) at entry
        assert _send(session, [0.01, 0.0, 0.0], i * DT).kind == "off"
    _enter(session, q0, 5 * DT)
    steps = []
    for i in range(1, 20):
        _measure(session, q0, 5 * DT + i * DT)
        steps.append(session.step(5 * DT + i * DT, DT))
    assert all(np.allclose(step.q, q0, atol=1e-12) for step in steps)


def test_a_scope_measured_off_the_portal_is_a_fault_that_holds():
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    _enter(session, q0)
    t, last = _streamed(session, 0.0, 30)
    assert _measure(session, last, t) is None and session.active  # on the portal: no fault
    knee_moved = last + np.array([0.0, 0.002, 0.0, 0.0, 0.0])  # gantry_y 2 mm away
    fault = _measure(session, knee_moved, t)
    off = _portal_distance(knee_moved)  # the test's own FK
    assert off > session.dock_tolerance
    expected = f"the measured scope axis passes {off * 1e3:.2f} mm from the portal (at most 1.00 mm)"
    assert fault == expected
    assert not session.active and np.array_equal(session.hold, last)
    assert _send(session, [0.01, 0.0, 0.0], t).kind == "off"
    assert session.why_off == f"the servo mode left on a fault: {fault}"
    assert _enter(session, q0, t)[0] and session.fault is None  # docked again: it may re-enter


# Every (state, event) pair of the module's table: (event, state after, a command comes out).
OFF_PORTAL = np.array([0.005, 0.0, 0.0, 0.0, 0.0])
STALE = 1.0  # s: joint states this old at entry or at a step (the task's limit: 0.2 s)
EVENTS = {
    "enter docked": lambda s, q: _enter(s, q),
    "enter off the portal": lambda s, q: _enter(s, q + OFF_PORTAL),
    "enter on stale states": lambda s, q: (s.measure(q, -STALE, 0.0), s.enter(0.0)),
    "leave": lambda s, q: s.leave(),
    "twist": lambda s, q: _send(s, [0.01, 0.0, 0.0], 0.0),
    "stale twist": lambda s, q: _send(s, [0.01, 0.0, 0.0], 0.0, stamp=-STALE),
    "foreign twist": lambda s, q: _send(s, [0.01, 0.0, 0.0], 0.0, frame="tool0"),
    "measure docked": lambda s, q: _measure(s, q, 0.0),
    "measure off the portal": lambda s, q: _measure(s, q + OFF_PORTAL, 0.0),
    "step on stale states": lambda s, q: (s.measure(q, -STALE, 0.0), s.step(0.0, DT)),
}
TABLE = {
    ("off", "enter docked"): "on",
    ("off", "enter off the portal"): "off",
    ("off", "enter on stale states"): "off",
    ("off", "leave"): "off",
    ("off", "twist"): "off",
    ("off", "stale twist"): "off",
    ("off", "foreign twist"): "off",
    ("off", "measure docked"): "off",
    ("off", "measure off the portal"): "off",
    ("off", "step on stale states"): "off",
    ("on", "enter docked"): "on",
    ("on", "enter off the portal"): "off",  # its states, measured off the portal, are a fault
    ("on", "enter on stale states"): "on",  # already on (a step on them would leave: below)
    ("on", "leave"): "off",
    ("on", "twist"): "on",
    ("on", "stale twist"): "on",  # refused, the mode stays on
    ("on", "foreign twist"): "on",
    ("on", "measure docked"): "on",
    ("on", "measure off the portal"): "off",
    ("on", "step on stale states"): "off",
}


@pytest.mark.parametrize(("state", "event"), sorted(TABLE))
def test_every_state_and_event(state, event):
    assert set(EVENTS) == {e for _, e in TABLE}
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    if state == "on":
        _enter(session, q0)
    EVENTS[event](session, q0)
    if "stale states" in event:
        _measure(session, q0, 0.0)  # fresh again, so that the step below shows the state
    expected = TABLE[(state, event)]
    assert ("on" if session.active else "off") == expected
    assert (session.step(0.0, DT) is not None) == (expected == "on")


def test_stale_future_and_foreign_frame_twists_are_refused_and_move_nothing():
    # Before: the node stamped every twist on receipt and ignored its frame_id, so an hour-old
    # twist, or one in the tool's frame, was applied as fresh and in world.
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    _enter(session, q0, 3600.0)
    t = 3600.0
    hostile = {
        "an hour old": dict(stamp=0.0),
        "an hour ahead": dict(stamp=7200.0),
        "in tool0": dict(frame="tool0"),
        "0.2 s old": dict(stamp=None),  # set below: twice the 0.1 s timeout
    }
    kinds = []
    for _ in range(50):
        for name, how in hostile.items():
            stamp = t - 2 * TASK.timeout if name == "0.2 s old" else how.get("stamp")
            refusal = _send(session, [0.0, 0.0, -0.02], t, stamp=stamp, frame=how.get("frame", "world"))
            kinds.append(refusal.kind)
        _measure(session, q0, t)
        assert np.allclose(session.step(t, DT).q, q0, atol=1e-12)
        t += DT
    assert set(kinds) == {"stale", "frame"} and session.refusals == {"stale": 150, "frame": 50}
    assert _send(session, [0.0, 0.0, -0.02], t, stamp=0.0) == TwistRefusal(
        "stale", "twist: stamped 3600.500 s ago, older than the 0.100 s limit"
    )
    assert _send(session, [0.0, 0.0, -0.02], t, stamp=t + 1.0).why == (
        "twist: stamped 1.000 s ahead of this clock, more than the 0.100 s limit "
        "(the sender is on another clock)"
    )
    assert _send(session, [0.0, 0.0, -0.02], t, frame="tool0").why == "frame_id 'tool0' is not 'world'"
    assert _send(session, [np.nan, 0.0, 0.0], t).kind == "malformed"
    # A fresh twist in world (or with no frame_id: world, as for DrillHole goals) moves the scope.
    assert _send(session, [0.0, 0.0, -0.02], t - 0.05, frame="") is None
    _measure(session, q0, t)
    assert np.linalg.norm(session.step(t, DT).q[:3] - q0[:3]) > 1e-6


def test_refusals_are_logged_once_per_kind_then_throttled():
    log = RefusalLog()
    stale, foreign = TwistRefusal("stale", "old"), TwistRefusal("frame", "tool0")
    lines = [log.report(stale, 0.01 * i) for i in range(100)]  # 1 s of a 100 Hz stale stream
    assert lines[0] == "twist refused (stale): old" and lines[1:] == [None] * 99
    assert log.report(foreign, 1.0) == "twist refused (frame): tool0"  # not hidden by the other kind
    assert log.report(stale, 1.5) is None
    assert log.report(stale, 2.0) == "twist refused (stale): old (100 more refused since, not logged)"


def test_the_joint_state_watchdog_refuses_stale_states_and_stops_the_servo_when_they_stop():
    # Before: the node entered the mode on 5 s old states and went on commanding with none.
    session = ScopeServoSession(TASK, PARAMS)
    q0 = session.docked_joints
    session.measure(q0, 95.0, 100.0)  # stamped 5 s before it arrived
    assert session.enter(100.0) == (
        False,
        "joint states: stamped 5.000 s ago, older than the 0.200 s limit",
    )
    assert _enter(session, q0, 100.0)[0]
    t, last = 100.0, q0
    steps = 0
    while True:  # a stream of commands, and no joint states after the first
        _send(session, [0.01, 0.0, 0.0], t)
        step = session.step(t, DT)
        if step is None:
            break
        last, steps, t = step.q, steps + 1, t + DT
    limit = TASK.joint_state_timeout
    assert round(limit / DT) <= steps <= round(limit / DT) + 1  # within the limit, then the fault
    assert session.fault == (
        f"joint-state watchdog: joint states: stamped {t - 100.0:.3f} s ago, older than the "
        f"{limit:.3f} s limit"
    )
    assert not session.active and np.array_equal(session.hold, last)
    assert _send(session, [0.01, 0.0, 0.0], t).kind == "off"


def test_a_clock_stepping_back_does_not_hide_missing_joint_states():
    limit = TASK.joint_state_timeout
    for back, most in ((0.15, round(limit / DT) + 1), (3600.0, 0)):
        session = ScopeServoSession(TASK, PARAMS)
        _enter(session, session.docked_joints, 100.0)
        t, steps = 100.0 - back, 0  # the clock steps back; no states come any more
        while session.step(t, DT) is not None:
            steps, t = steps + 1, t + DT
        assert most - 1 <= steps <= most  # counted periods, as with a true clock; at once if far
    assert session.fault == (
        "joint-state watchdog: joint states: stamped 3600.000 s ahead of this clock, more than the 0.200 s "
        "limit (the sender is on another clock)"
    )


def test_a_command_period_longer_than_the_dead_man_timeout_is_refused():
    # Before: scope_servo_node at its lowest rate, 1 Hz, moved the tip 20 mm on one command.
    check_command_period(TASK, 0.01)
    with pytest.raises(ValueError) as error:
        check_command_period(TASK, 1.0)
    assert str(error.value) == (
        "a command period of 1 s is longer than the dead-man timeout 0.1 s of arthroscopy.yaml: "
        "give at least 10 Hz"
    )
