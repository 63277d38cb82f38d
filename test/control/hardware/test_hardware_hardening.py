"""Hardening of the hardware component (issue 11, items 1-6): every hostile input and drive state
is refused or stops every drive with a reason naming it.

Two rigs: `Rig` (test_hardware_safety: the real SimulatedDrives on independent joint inertias) for
the lifecycle and state paths, and `PlantRig` (the SimulatedDrives on the MuJoCo rigid-body plant
of simulation.simulated_backend, a model the controller does not contain) wherever a true
position past a limit is the question.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_hardware_safety import DT, Q0, Rig

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.lifecycle import CallbackReturn, LifecycleState, ReturnType
from quirobot_control.models.dynamics import gravity_model
from quirobot_control.simulation.simulated_backend import SimulatedBackend
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")


@pytest.fixture(scope="module")
def gravity(parameters):
    return gravity_model(parameters)


@pytest.fixture(scope="module")
def limits(parameters):
    return JointLimits.from_parameters(parameters)


class PlantRig:
    """The hardware component on the simulated backend's drives and MuJoCo plant (true positions in
    `plant.position`)."""

    def __init__(self, parameters, control, info, gravity, q0):
        self.backend = SimulatedBackend(parameters, control, q0)
        self.hardware = QuirobotHardware(
            parameters, control, lambda name: self.backend.drives[name], gravity=gravity
        )
        self.t = 0.0
        assert self.hardware.on_init(info) is CallbackReturn.SUCCESS
        assert self.hardware.on_configure() is CallbackReturn.SUCCESS
        assert self.hardware.on_activate() is CallbackReturn.SUCCESS

    @property
    def true_position(self) -> np.ndarray:
        return self.backend.plant.position.copy()

    def cycle(self, position=None, velocity=None) -> ReturnType:
        hw = self.hardware
        self.backend.before_read()
        status = hw.read(self.t, DT)
        if position is not None:
            hw.set_commands(self.t, position, velocity if velocity is not None else np.zeros(6))
        write = hw.write(self.t, DT)
        self.backend.after_write()
        self.t += DT
        return status if status is not ReturnType.OK else write

    def states(self):
        return [d.feedback().state for d in self.backend.drives.values()]


def all_stopped(states) -> bool:
    return all(s in (DriveState.QUICK_STOP, DriveState.FAULT) for s in states)


# --- 1: a drive that leaves Operation enabled is a fault with its name -------------------------------
@pytest.mark.parametrize(
    "leave",
    [
        ("gantry_y", "disable", "disabled"),
        ("gantry_z", "disable", "disabled"),
        ("wrist_pitch", "quick_stop", "quick_stop"),
    ],
)
def test_a_drive_leaving_operation_enabled_stops_every_drive(parameters, control, info, leave):
    name, action, state = leave
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    for _ in range(20):
        assert rig.cycle(np.array(Q0)) is ReturnType.OK
    getattr(rig.drives[name], action)()
    assert rig.cycle(np.array(Q0)) is ReturnType.ERROR
    assert all_stopped(rig.states()), rig.states()
    assert f"{name}" in rig.hardware.stop_reason and state in rig.hardware.stop_reason


class _EnableIgnored(SimulatedDrive):
    def enable(self) -> None:  # a drive that acknowledges enable() but stays disabled
        return None


def test_activation_checks_that_every_drive_is_enabled(parameters, control, info):
    drives = {name: drive_for_joint(parameters, name) for name in DRILL_AXES}
    drives["gantry_x"] = _EnableIgnored(parameters.joint("gantry_x"), parameters.drive)
    hw = QuirobotHardware(parameters, control, lambda name: drives[name])
    assert hw.on_init(info) is CallbackReturn.SUCCESS
    assert hw.on_configure() is CallbackReturn.SUCCESS
    assert hw.on_activate() is CallbackReturn.ERROR
    assert "gantry_x" in hw.stop_reason and "disabled" in hw.stop_reason
    assert hw.lifecycle is not LifecycleState.ACTIVE
    assert all(d.state is not DriveState.ENABLED for d in drives.values())


# --- 2: a jog into a soft limit stops before the end stop (MuJoCo plant) ---------------------------
@pytest.mark.parametrize(("joint", "direction"), [("gantry_x", 1), ("gantry_z", -1), ("wrist_pitch", 1)])
def test_a_jog_at_the_velocity_limit_never_reaches_the_hard_limit(
    parameters, control, info, gravity, limits, joint, direction
):
    j = DRILL_AXES.index(joint)
    q0 = np.array([0.8, 0.9, 1.0, 1.5, 0.5, 0.004])
    soft = limits.soft_upper[j] if direction > 0 else limits.soft_lower[j]
    q0[j] = soft - direction * 0.15  # 15 cm (rad) before the soft limit
    rig = PlantRig(parameters, control, info, gravity, q0)
    speed = 0.95 * limits.velocity[j]
    command = q0.copy()
    velocity = np.zeros(6)
    worst = 0.0
    for _ in range(800):  # ramped up at the acceleration limit, the jog runs on past the limits
        velocity[j] = direction * min(speed, abs(velocity[j]) + limits.acceleration[j] * DT)
        command[j] += velocity[j] * DT
        rig.cycle(command, velocity)
        q = rig.true_position[j]
        worst = max(worst, direction * (q - soft))
    hard = limits.upper[j] if direction > 0 else limits.lower[j]
    assert rig.hardware.stop_reason is None, rig.hardware.stop_reason
    assert worst < control.joint(joint).following_error, f"{worst} past the soft limit"
    assert direction * (hard - rig.true_position[j]) > 0.0


# --- 3: lifecycle guards; an exception inside the cycle stops every drive ----------------------------
def _hardware_in(state, parameters, control, info):
    """A hardware component (on fresh simulated drives) brought to lifecycle `state`."""
    rig = Rig(parameters, control, info, Q0)
    hw = rig.hardware
    if state is not LifecycleState.UNCONFIGURED:
        assert hw.on_configure() is CallbackReturn.SUCCESS
    if state is LifecycleState.ACTIVE:
        assert hw.on_activate() is CallbackReturn.SUCCESS
    return rig


EVENTS = ("configure", "activate", "deactivate", "cleanup", "error", "acknowledge")


@pytest.mark.parametrize(
    "state", [LifecycleState.UNCONFIGURED, LifecycleState.INACTIVE, LifecycleState.ACTIVE]
)
@pytest.mark.parametrize("event", EVENTS)
def test_every_lifecycle_state_and_event(parameters, control, info, state, event):
    """The transition table, pair by pair: an allowed event lands in its target state; a refused
    one returns ERROR, says why and leaves the lifecycle and the drives as they were."""
    from quirobot_control.hardware.lifecycle import LIFECYCLE_TRANSITIONS

    rig = _hardware_in(state, parameters, control, info)
    hw = rig.hardware
    before = rig.states()
    call = {
        "configure": hw.on_configure,
        "activate": hw.on_activate,
        "deactivate": hw.on_deactivate,
        "cleanup": hw.on_cleanup,
        "error": hw.on_error,
        "acknowledge": lambda: hw.acknowledge_stop("test"),
    }[event]
    result = call()
    target = LIFECYCLE_TRANSITIONS.get((state, event))
    if target is None:
        assert result is CallbackReturn.ERROR
        assert hw.lifecycle is state
        assert rig.states() == before
        assert event in hw.refused and state.value in hw.refused
        assert hw.stop_reason is None  # a refused request is not a stop
    else:
        assert result is CallbackReturn.SUCCESS, hw.refused
        assert hw.lifecycle is target


def test_read_and_write_before_activation_are_refused(parameters, control, info):
    rig = _hardware_in(LifecycleState.INACTIVE, parameters, control, info)
    hw = rig.hardware
    assert hw.read(0.0, DT) is ReturnType.ERROR
    assert hw.write(0.0, DT) is ReturnType.ERROR
    assert "write" in hw.refused and "inactive" in hw.refused
    assert all(s is DriveState.DISABLED for s in rig.states())
    assert all(d.current_reference == 0.0 for d in rig.drives.values())


@pytest.mark.parametrize(
    ("label", "feed", "pattern"),
    [
        ("string command", lambda hw: hw.set_commands(0.0, ["a"] * 6, [0.0] * 6), "position.*gantry_x"),
        ("short array", lambda hw: hw.set_commands(0.0, np.zeros(5), np.zeros(6)), "5 position"),
        ("long array", lambda hw: hw.set_commands(0.0, np.array(Q0), np.zeros(7)), "7 velocity"),
        ("2-D array", lambda hw: hw.set_commands(0.0, np.zeros((6, 1)), np.zeros(6)), "position"),
        ("string velocity", lambda hw: hw.set_command("gantry_y", "velocity", "fast"), "velocity.*gantry_y"),
        ("string effort", lambda hw: hw.set_commands(0.0, Q0, [0.0] * 6, effort=["x"] * 6), "effort"),
        ("None time", lambda hw: hw.set_commands(None, Q0, [0.0] * 6), "time"),
    ],
)
def test_a_malformed_command_stops_every_drive_with_the_reason(
    parameters, control, info, label, feed, pattern
):
    import re

    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    feed(hw)  # never raises
    assert hw.write(0.0, DT) is ReturnType.ERROR, label
    assert all_stopped(rig.states())
    assert re.search(pattern, hw.stop_reason), hw.stop_reason


@pytest.mark.parametrize("period", [0.0, -1e-3, math.nan, math.inf, "1ms"])
def test_a_bad_period_stops_every_drive(parameters, control, info, period):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    assert hw.read(0.0, period) is ReturnType.ERROR
    assert all_stopped(rig.states())
    assert "period" in hw.stop_reason


def test_a_drive_raising_anything_in_read_stops_every_drive(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)

    def broken():
        raise ZeroDivisionError("encoder division")

    rig.drives["wrist_yaw"].feedback = broken
    assert rig.hardware.read(0.0, DT) is ReturnType.ERROR
    assert "wrist_yaw" in rig.hardware.stop_reason and "encoder division" in rig.hardware.stop_reason
    assert all_stopped([d.state for n, d in rig.drives.items() if n != "wrist_yaw"])


# --- 4: the watchdog is armed at activation ------------------------------------------------------
def test_a_hold_that_never_receives_a_command_stops(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    for _ in range(10):
        assert rig.cycle() is ReturnType.OK
    rig.t = control.watchdog_startup_timeout + 0.01  # the adapter's clock: no command since activation
    assert rig.cycle() is ReturnType.ERROR
    assert "no command since activation" in rig.hardware.stop_reason
    assert all_stopped(rig.states())


def test_a_frozen_clock_and_zero_periods_cannot_disable_the_startup_watchdog(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    steps = round(control.watchdog_startup_timeout / DT) + 2
    status = ReturnType.OK
    for _ in range(steps):
        hw.read(5.0, DT)
        status = hw.write(5.0, DT)  # frozen clock
        if status is ReturnType.ERROR:
            break
    assert status is ReturnType.ERROR
    assert "no command since activation" in hw.stop_reason


def test_a_command_stream_lost_while_moving_is_reported_as_such(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    q = np.array(Q0)
    v = np.array([0.5, 0, 0, 0, 0, 0])
    for k in range(300):  # ramp gantry_x up to 0.5 m/s
        s = min(1.0, k / 100)
        q = q + s * v * DT
        assert rig.cycle(q, s * v) is ReturnType.OK, rig.hardware.stop_reason
    status = ReturnType.OK
    for _ in range(int(control.watchdog_stop_timeout / DT)):
        status = rig.cycle()  # the stream is gone
        if status is ReturnType.ERROR:
            break
    assert status is ReturnType.ERROR
    assert rig.hardware.stop_reason.startswith("command watchdog"), rig.hardware.stop_reason
    assert "lost" in rig.hardware.stop_reason and "gantry_x" in rig.hardware.stop_reason


# --- 5: effort limits ------------------------------------------------------------------------
def test_the_effort_limit_bounds_the_command_whatever_the_feed_forward(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    limit = parameters.drill.feed.effort_limit
    for _ in range(5):
        hw.set_commands(rig.t, np.array(Q0), np.zeros(6), effort=np.array([0, 0, 0, 0, 0, 1e12]))
        hw.read(rig.t, DT)
        assert hw.write(rig.t, DT) is ReturnType.OK, hw.stop_reason
        feed = rig.drives["drill_feed"]
        delivered = (
            feed.current_reference * feed.motor.torque_constant * feed.transmission.ratio * feed.efficiency
        )
        assert abs(delivered) <= limit * (1 + 1e-9)
        rig.t += DT


def test_a_load_feed_forward_adds_to_the_motion_feed_forward_until_cleared(parameters, control, info):
    """set_load_feedforward: the process load (a drive bridge's bone thrust) on top of the effort
    feed-forward, in the feed drive's delivered force; None clears it."""
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    feed = next(joint for joint in hw.joints if joint.name == "drill_feed")

    def delivered(effort: float, load: np.ndarray | None) -> float:
        """N: the current the hardware commands the feed drive (CSP: its current feed-forward) as
        force, after one cycle with these feed-forwards."""
        hw.set_commands(rig.t, np.array(Q0), np.zeros(6), effort=np.array([0, 0, 0, 0, 0, effort]))
        hw.set_load_feedforward(load)
        hw.read(rig.t, DT)
        assert hw.write(rig.t, DT) is ReturnType.OK, hw.stop_reason
        rig.t += DT
        return feed.current_command * feed.current_gain

    load = np.array([0, 0, 0, 0, 0, 12.5])
    base = delivered(5.0, None)
    assert delivered(5.0, load) - base == pytest.approx(12.5, rel=1e-6)
    assert delivered(5.0, None) == pytest.approx(base, rel=1e-9, abs=1e-9)


def test_a_non_finite_load_feed_forward_stops_every_drive_naming_the_joint(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    rig.hardware.set_load_feedforward(np.array([0, 0, 0, math.nan, 0, 0]))
    assert rig.hardware.stop_reason is not None and "wrist_yaw" in rig.hardware.stop_reason
    assert "load feed-forward" in rig.hardware.stop_reason


def test_measured_velocity_above_the_limit_is_a_fault(parameters, control, info, limits):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    for _ in range(5):
        assert rig.cycle(np.array(Q0)) is ReturnType.OK
    rig.v[1] = 2.0 * limits.velocity[1]  # gantry_y hit from outside
    status = ReturnType.OK
    for _ in range(5):
        status = rig.cycle(np.array(Q0))
        if status is ReturnType.ERROR:
            break
    assert status is ReturnType.ERROR
    assert "gantry_y" in rig.hardware.stop_reason and "velocity" in rig.hardware.stop_reason


# --- 6: faults need acknowledgement; the event log is bounded ------------------------------------
def test_configure_does_not_clear_a_latched_stop(parameters, control, info):
    rig = _hardware_in(LifecycleState.ACTIVE, parameters, control, info)
    hw = rig.hardware
    rig.drives["gantry_x"].inject_fault("over-temperature")
    assert rig.cycle(np.array(Q0)) is ReturnType.ERROR
    reason = hw.stop_reason
    assert hw.on_configure() is CallbackReturn.ERROR  # configure only from unconfigured
    assert hw.on_error() is CallbackReturn.SUCCESS  # ros2_control's path after an ERROR
    assert hw.on_configure() is CallbackReturn.SUCCESS
    assert hw.stop_reason == reason
    assert rig.drives["gantry_x"].state is DriveState.FAULT
    assert hw.on_activate() is CallbackReturn.ERROR
    assert "acknowledge" in hw.refused
    assert all_stopped(rig.states())
    for _ in range(50):  # the stops end: standstill, brake holding, inverter off
        rig.cycle()
    assert hw.acknowledge_stop("operator: cooled down") is CallbackReturn.SUCCESS
    assert any("acknowledged" in e and "over-temperature" in e and "cooled down" in e for e in hw.events)
    assert hw.stop_reason is None
    assert hw.on_activate() is CallbackReturn.SUCCESS
    assert all(s is DriveState.ENABLED for s in rig.states())


def test_a_jog_held_at_a_soft_limit_logs_one_event_and_counts(parameters, control, info, limits):
    q0 = list(Q0)
    q0[3] = limits.soft_upper[3] - 0.001
    rig = Rig(parameters, control, info, q0)
    rig.start()
    command = np.array(q0)
    command[3] = limits.soft_upper[3] + 0.1  # held beyond the soft limit
    for _ in range(2000):
        assert rig.cycle(command) is ReturnType.OK, rig.hardware.stop_reason
    events = [e for e in rig.hardware.events if "soft limit" in e]
    assert len(events) == 1, events[:5]
    counts = rig.hardware.safety.log.counts
    assert max(counts.values()) >= 2000


def test_every_axis_can_brake_at_the_acceleration_the_limiter_brakes_at(
    parameters, control, info, limits, gravity
):
    """The limiter brakes at JointLimits.acceleration: each axis's drive gives it with force to spare
    (current and URDF effort limits over the effective inertia, less the holding effort against
    gravity from the robot's dynamics model, at least 1.3 times it: gantry_y has 1.39), so the feedback keeps
    authority while braking."""
    rig = _hardware_in(LifecycleState.INACTIVE, parameters, control, info)
    holding = np.abs(gravity(np.array(Q0)))
    names = rig.hardware.joint_names
    for joint, a_brake in zip(rig.hardware.joints, limits.select(names).acceleration, strict=True):
        spare = (
            joint.acceleration_capability * joint.effective_inertia - holding[DRILL_AXES.index(joint.name)]
        )
        assert spare / joint.effective_inertia >= 1.3 * a_brake, joint.name


def test_docs_safety_names_only_tests_that_exist():
    """docs/safety.md's hazard tables cite tests by name: each must be a test function here."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    cited = set(re.findall(r"\b(test_\w+)\b", (root / "docs" / "safety.md").read_text()))
    defined = set()
    for path in (root / "test").rglob("test_*.py"):
        defined |= set(re.findall(r"^\s*def (test_\w+)", path.read_text(), re.MULTILINE))
        defined.add(path.stem)
    assert cited, "docs/safety.md cites no test"
    assert not cited - defined, sorted(cited - defined)
