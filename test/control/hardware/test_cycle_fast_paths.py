"""The control cycle's fast paths (issue 36) against the plain code they stand for.

Each per-cycle shortcut of the hardware component, its safety layer and the drive bridge takes
the common case (plain finite floats, known joints, nothing to log) and falls back to the code it
replaces otherwise; here each gives the same numbers, refusals and messages as that code.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from test_hardware_safety import DT, Q0, Rig

from quirobot_control.axes.virtual_fixtures import NoGoZone, ToolGeometry, VirtualFixtures
from quirobot_control.hardware.joint_control import JointControl, check_period
from quirobot_control.hardware.lifecycle import ALLOWED_IN, LIFECYCLE_TRANSITIONS, LifecycleState
from quirobot_control.safety.event_log import EventLog
from quirobot_control.safety.motion_monitor import SafetyStopError

#: Values where a clamp's comparisons differ from min/max if written wrong: signed zeros, NaN,
#: infinities, the limits themselves and beyond.
EDGES = [0.0, -0.0, 1e-300, -1e-300, 2.5, -2.5, 3.0, -3.0, 1e9, -1e9, math.inf, -math.inf, math.nan]


def same(a: float, b: float) -> bool:
    """Bit for bit (NaN equal to NaN, 0.0 not to -0.0)."""
    return struct.pack("<d", a) == struct.pack("<d", b)


def test_allowed_in_lists_every_pair_of_the_table():
    pairs = {(state, request) for request, states in ALLOWED_IN.items() for state in states}
    assert pairs == set(LIFECYCLE_TRANSITIONS)


class _Recorder:
    def __init__(self):
        self.sent = []

    def command_position(self, position, velocity, current):
        self.sent.append(("position", position, velocity, current))

    def command_current(self, current):
        self.sent.append(("current", current))


@pytest.mark.parametrize("effort_ff", [None, *EDGES])
@pytest.mark.parametrize("load", [0.0, -0.0, 1.0, -1e9, math.nan])
def test_command_drives_clamps_are_min_and_max(parameters, control, effort_ff, load):
    """CSP: the effort and the current feed-forward clamped as min(max(x, -limit), limit) was."""
    joint = JointControl.for_axis("gantry_x", _Recorder(), parameters, control)
    joint.effort_limit = 3.0
    joint.load_ff = load
    joint.holding_current = 0.25
    for velocity in EDGES:
        joint.effort_ff = effort_ff
        joint.last_velocity_command = 0.5
        effort = effort_ff if effort_ff is not None else joint.effective_inertia * ((velocity - 0.5) / DT)
        effort = min(max(effort + load, -3.0), 3.0)
        limit = joint.pid.gains.output_limit
        current = min(max(joint.holding_current + effort / joint.current_gain, -limit), limit)
        joint.command_drive(0.1, velocity, 0.1, DT, cst=False)
        assert same(joint.current_command, current), (velocity, joint.current_command, current)
        assert joint.drive.sent[-1][1:] == (0.1, velocity, joint.current_command)


@pytest.mark.parametrize("period", [DT, 1, np.float64(DT), 0.0, -DT, math.nan, math.inf, "0.001", None])
def test_the_period_check_is_skipped_only_where_it_passes(period):
    fast = type(period) is float and 0.0 < period < math.inf
    try:
        check_period(period)
        passes = True
    except SafetyStopError:
        passes = False
    assert passes or not fast


def test_motion_commands_store_what_set_command_stores(parameters, control, info):
    """set_motion_commands' C-level tests: floats take the fast path, anything else (numpy
    scalars, ints, a string, an unknown name) goes through set_command: the same commands."""
    names = list(info.joints[k].name for k in range(len(info.joints)))
    streams = [
        [0.1 * k for k in range(6)],
        [np.float64(0.1 * k) for k in range(6)],
        [1, 2, 3, 4, 5, 6],
    ]
    for values in streams:
        fast, slow = Rig(parameters, control, info, Q0), Rig(parameters, control, info, Q0)
        fast.start()
        slow.start()
        fast.hardware.set_motion_commands(names, values, values[::-1])
        for name, q, v in zip(names, values, values[::-1], strict=True):
            slow.hardware.set_command(name, "position", q)
            slow.hardware.set_command(name, "velocity", v)
        assert [j.command for j in fast.hardware.joints] == [j.command for j in slow.hardware.joints]
    bad = Rig(parameters, control, info, Q0)
    bad.start()
    bad.hardware.set_motion_commands(names, [0.0] * 5 + ["x"], [0.0] * 6)
    assert bad.hardware.lifecycle is LifecycleState.INACTIVE
    assert "position command 'x' for joint drill_feed is not a number" in bad.hardware.stop_reason


@pytest.mark.parametrize("where", range(12))
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_filter_names_the_first_non_finite_command(parameters, control, info, where, value):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    safety = rig.hardware.safety
    position = [j.state["position"] for j in rig.hardware.joints]
    velocity = [0.0] * 6
    (position if where < 6 else velocity)[where % 6] = value
    with pytest.raises(SafetyStopError) as stop:
        safety.filter(0.0, DT, position, velocity, position if where < 6 else list(position))
    label = "position" if where < 6 else "velocity"
    assert (
        stop.value.reason
        == f"non-finite {label} command {value} for joint {rig.hardware.joint_names[where % 6]}"
    )


def test_filter_raises_what_isfinite_raises_before_a_non_finite_value(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    position = [j.state["position"] for j in rig.hardware.joints]
    with pytest.raises(TypeError, match="must be real number"):
        rig.hardware.safety.filter(0.0, DT, [position[0], "x", math.nan, *position[3:]], [0.0] * 6, position)


def test_axes_in_order_give_the_indexed_vector(parameters, control, info):
    hardware = Rig(parameters, control, info, Q0).hardware
    tool = ToolGeometry.from_parameters(parameters)
    hardware.set_fixtures(VirtualFixtures((NoGoZone.box("far", [9.0, 9.0, 9.0], [0.1, 0.1, 0.1]),), tool))
    assert hardware._axes_in_order and hardware._axes_index == [0, 1, 2, 3, 4, 5]
    values = [0.5, -1.0, 2.0, 0.25, 1e-9, -0.0]
    vector = hardware._axes_vector(values)
    assert vector == [values[k] for k in hardware._axes_index] and vector is not values
    hardware._axes_in_order = False  # the general path
    assert hardware._axes_vector(values) == vector


def test_an_empty_cycle_leaves_the_event_log_as_it_was():
    log = EventLog()
    log.end_cycle()
    assert log._active == set() and log._seen_this_cycle == set()
    log.record(("k",), "first")
    log.end_cycle()
    log.record(("k",), "again")  # the same episode: counted, not logged
    log.end_cycle()
    log.end_cycle()  # a cycle without it: the episode ends
    log.record(("k",), "new episode")
    assert list(log.messages) == ["first", "new episode"]
    assert log.counts[("k",)] == 3
