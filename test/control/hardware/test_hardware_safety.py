"""QuirobotHardware: the ros2_control lifecycle and every safety path, on simulated drives.

The test rig is the hardware component with its real SimulatedDrives on six independent joint
inertias (the configured effective inertias and the joints' viscous friction), integrated at
10 kHz: no mock of the component, the drives or the controllers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.hardware_info import HardwareInfo
from quirobot_control.hardware.lifecycle import CallbackReturn, LifecycleState, ReturnType
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import axes_for
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

DT = 1e-3
SUBSTEPS = 10


class Rig:
    """Hardware component + drives + independent joint inertias."""

    def __init__(self, parameters, control, info, q0):
        self.drives = {name: drive_for_joint(parameters, name) for name in DRILL_AXES}
        self.hardware = QuirobotHardware(parameters, control, lambda name: self.drives[name])
        self.inertia = np.array([control.joint(n).effective_inertia for n in DRILL_AXES])
        self.damping = np.append(parameters.damping, parameters.drill.feed.damping)
        self.q = np.array(q0, dtype=float)
        self.v = np.zeros(6)
        self.t = 0.0
        self.external = np.zeros(6)  # N or N*m on each joint
        for j, drive in enumerate(self.drives.values()):
            drive.advance(0.0, self.q[j], 0.0)
        assert self.hardware.on_init(info) is CallbackReturn.SUCCESS

    def start(self):
        assert self.hardware.on_configure() is CallbackReturn.SUCCESS
        assert self.hardware.on_activate() is CallbackReturn.SUCCESS

    def cycle(self, position=None, velocity=None):
        """One control period; commands (6,) if given (else none: a stale command)."""
        hw = self.hardware
        for j, drive in enumerate(self.drives.values()):
            drive.advance(0.0, self.q[j], self.v[j])
        status = hw.read(self.t, DT)
        if status is ReturnType.OK:
            if position is not None:
                hw.set_commands(self.t, position, velocity if velocity is not None else np.zeros(6))
            status = hw.write(self.t, DT)
        h = DT / SUBSTEPS
        for _ in range(SUBSTEPS):
            effort = np.array(
                [d.advance(h, self.q[j], self.v[j]) for j, d in enumerate(self.drives.values())]
            )
            self.v += h * (effort - self.damping * self.v - self.external) / self.inertia
            self.q += h * self.v
        self.t += DT
        return status

    def states(self):
        return [d.feedback().state for d in self.drives.values()]

    def assert_all_stopped(self, reason_pattern):
        import re

        assert all(s in (DriveState.QUICK_STOP, DriveState.FAULT) for s in self.states()), self.states()
        assert re.search(reason_pattern, self.hardware.stop_reason), self.hardware.stop_reason
        # Stop category 1: each drive ramps to standstill at its quick-stop deceleration, brakes,
        # holds under power while the brake engages, then switches off (a collision force, if
        # any, is over once the robot stopped).
        self.external[:] = 0.0
        for _ in range(500):
            self.cycle()
        assert all(abs(d.feedback().current) < 1e-3 for d in self.drives.values())
        assert all(d.brake_engaged for d in self.drives.values())


Q0 = [0.8, 0.9, 1.0, 1.5, 0.5, 0.01]


def test_lifecycle_and_interfaces(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    hw = rig.hardware
    assert set(hw.export_state_interfaces()) == {
        (n, s) for n in DRILL_AXES for s in ("position", "velocity", "effort")
    }
    assert set(hw.export_command_interfaces()) == {
        (n, c) for n in DRILL_AXES for c in ("position", "velocity")
    }
    assert hw.on_configure() is CallbackReturn.SUCCESS
    assert hw.lifecycle is LifecycleState.INACTIVE
    assert all(s is DriveState.DISABLED for s in rig.states())
    assert hw.on_activate() is CallbackReturn.SUCCESS
    assert all(s is DriveState.ENABLED for s in rig.states())
    # Commands start at the measured positions: holding, nothing moves.
    for _ in range(200):
        assert rig.cycle(np.array(Q0)) is ReturnType.OK
    np.testing.assert_allclose(rig.q, Q0, atol=5e-6)
    # A smooth move is tracked (the velocity command is the derivative of the position command).
    target = np.array(Q0) + np.array([0.01, -0.01, 0.01, 0.01, -0.01, 0.002])
    for k in range(1, 501):
        s = 0.5 - 0.5 * math.cos(math.pi * k / 500)
        ds = 0.5 * math.pi / 0.5 * math.sin(math.pi * k / 500)
        assert rig.cycle(Q0 + s * (target - Q0), ds * (target - Q0)) is ReturnType.OK
    for _ in range(300):
        rig.cycle(target)
    np.testing.assert_allclose(rig.q, target, atol=5e-6)
    assert np.allclose([hw.state(n, "position") for n in DRILL_AXES], rig.q, atol=1e-6)
    assert hw.on_deactivate() is CallbackReturn.SUCCESS
    assert all(s is DriveState.DISABLED for s in rig.states())
    assert hw.stop_reason is None


def test_on_init_refuses_unknown_joints_and_interfaces(parameters, control, info):
    hw = QuirobotHardware(parameters, control, lambda name: drive_for_joint(parameters, name))
    joints = list(info.joints)
    bad = HardwareInfo(
        info.name,
        info.plugin,
        info.parameters,
        (*joints[:-1], joints[-1].__class__("elbow", ("position",), ())),
    )
    assert hw.on_init(bad) is CallbackReturn.ERROR
    assert "elbow" in hw.stop_reason
    first = joints[0]
    bad = HardwareInfo(
        info.name, info.plugin, info.parameters, (first.__class__(first.name, ("effort",), ()),)
    )
    assert hw.on_init(bad) is CallbackReturn.ERROR
    assert "gantry_x: unsupported command interface(s) effort" in hw.stop_reason


def test_drive_fault_stops_every_drive(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    for _ in range(20):
        rig.cycle(np.array(Q0))
    rig.drives["wrist_pitch"].inject_fault("encoder signal lost")
    assert rig.cycle(np.array(Q0)) is ReturnType.ERROR
    rig.assert_all_stopped(r"drive fault on wrist_pitch: encoder signal lost")
    assert rig.hardware.stop_code is StopCode.DRIVE_FAULT
    assert rig.drives["wrist_pitch"].feedback().state is DriveState.FAULT


def test_nan_command_stops_every_drive(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    for _ in range(20):
        rig.cycle(np.array(Q0))
    command = np.array(Q0)
    command[1] = math.nan
    assert rig.cycle(command) is ReturnType.ERROR
    rig.assert_all_stopped(r"non-finite position command nan for joint gantry_y")
    rig2 = Rig(parameters, control, info, Q0)
    rig2.start()
    rig2.hardware.set_command("drill_feed", "velocity", math.inf)
    assert rig2.cycle() is ReturnType.ERROR
    rig2.assert_all_stopped(r"non-finite velocity command inf for joint drill_feed")


@pytest.mark.parametrize(
    ("interface", "value"), [("effort", math.inf), ("acceleration", -math.inf), ("effort", math.nan)]
)
def test_non_finite_feed_forward_stops_every_drive(parameters, control, info, interface, value):
    """An infinite feed-forward would saturate its drive at full current (the PID clamps it): refused."""
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    for _ in range(20):
        rig.cycle(np.array(Q0))
    rig.hardware.set_commands(rig.t, np.array(Q0), np.zeros(6))
    rig.hardware.set_command("gantry_z", interface, value)
    assert rig.hardware.write(rig.t, DT) is ReturnType.ERROR
    rig.assert_all_stopped(rf"non-finite {interface} feed-forward {value} for joint gantry_z")


def test_stale_command_holds_position_then_stops(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    velocity = np.array([0.05, 0, 0, 0, 0, 0])
    command = np.array(Q0)
    for _ in range(100):  # moving at 50 mm/s along x
        command = command + velocity * DT
        rig.cycle(command, velocity)
    held_from = rig.q.copy()
    # The commanding side goes silent: after the watchdog timeout the joint holds where it is.
    steps = int(round(control.watchdog_stop_timeout / DT)) - 5
    for _ in range(steps):
        assert rig.cycle() is ReturnType.OK
    assert any("command watchdog" in e and "holding position" in e for e in rig.hardware.events)
    assert abs(rig.q[0] - held_from[0]) < velocity[0] * (control.watchdog_timeout + 0.05)
    assert np.all(np.abs(rig.v) < 1e-4)  # at rest
    assert all(s is DriveState.ENABLED for s in rig.states())
    # Still silent past the stop timeout: every drive is stopped.
    for _ in range(10):
        rig.cycle()
    rig.assert_all_stopped(r"command watchdog: no command for 0\.5\d* s")


def test_soft_limit_clamps_commands_and_a_breach_stops_every_drive(parameters, control, info):
    joint = parameters.joint("gantry_x")
    near = list(Q0)
    near[0] = joint.soft_upper - 0.02
    rig = Rig(parameters, control, info, near)
    rig.start()
    # Commanded 30 mm past the soft limit at 0.1 m/s: the command stops at the soft limit.
    command = np.array(near)
    for _ in range(600):
        command[0] = min(command[0] + 0.1 * DT, joint.soft_upper + 0.03)
        assert rig.cycle(command, np.array([0.1, 0, 0, 0, 0, 0])) is ReturnType.OK
    assert rig.q[0] <= joint.soft_upper + 1e-5
    assert rig.q[0] > joint.soft_upper - 1e-3
    assert any("soft limit: joint gantry_x command" in e and "clamped" in e for e in rig.hardware.events)
    # A joint activated in its soft-stop band (where homing leaves it): led back to the soft
    # limit at the command acceleration, within its following-error limit, no stop.
    band = list(Q0)
    band[0] = joint.soft_upper + 2 * control.joint("gantry_x").following_error
    rig = Rig(parameters, control, info, band)
    rig.start()
    for _ in range(1000):
        assert rig.cycle(np.array(band)) is ReturnType.OK, rig.hardware.stop_reason
    assert joint.soft_upper - 1e-4 <= rig.q[0] <= joint.soft_upper + 1e-5
    # A joint found beyond its hard limit (by more than its following-error allowance): stop.
    beyond = list(Q0)
    beyond[0] = joint.upper + 2 * control.joint("gantry_x").following_error
    rig = Rig(parameters, control, info, beyond)
    rig.start()
    assert rig.cycle(np.array(beyond)) is ReturnType.ERROR
    rig.assert_all_stopped(
        r"soft limit: joint gantry_x at 2\.00\d* is 0\.01\d* past its soft upper limit 1\.99"
    )


def test_following_error_stops_every_drive(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    # A collision: gantry_y pushed back with twice the force its drive can give.
    rig.external[1] = 2.0 * parameters.joint("gantry_y").effort_limit
    stopped_at = None
    for k in range(1000):
        if rig.cycle(np.array(Q0)) is ReturnType.ERROR:
            stopped_at = k
            break
    assert stopped_at is not None and stopped_at < 200
    rig.assert_all_stopped(r"following error: joint gantry_y is 0\.002\d* from its command \(limit 0\.002\)")
    assert rig.hardware.stop_code is StopCode.SAFETY_LIMIT


def test_on_error_quick_stops(parameters, control, info):
    rig = Rig(parameters, control, info, Q0)
    rig.start()
    rig.cycle(np.array(Q0))
    assert rig.hardware.on_error() is CallbackReturn.SUCCESS
    assert all(s is DriveState.QUICK_STOP for s in rig.states())
    assert rig.hardware.lifecycle is LifecycleState.UNCONFIGURED
    # Recovery: configure, acknowledge the stop (faults reset, logged), activate again, holding
    # where the joints are.
    assert rig.hardware.on_configure() is CallbackReturn.SUCCESS
    assert rig.hardware.on_activate() is CallbackReturn.ERROR  # the stop is latched
    for _ in range(50):  # the stops end: standstill, brake holding, inverter off
        rig.cycle()
    assert rig.hardware.acknowledge_stop("test: recovery") is CallbackReturn.SUCCESS
    assert rig.hardware.on_activate() is CallbackReturn.SUCCESS
    assert all(s is DriveState.ENABLED for s in rig.states())
    held = rig.q.copy()
    for _ in range(100):
        assert rig.cycle(held) is ReturnType.OK
    np.testing.assert_allclose(rig.q, held, atol=5e-5)


def test_safety_limits_are_the_urdf_limits_and_safety_controllers(parameters, control, info):
    """The safety layer enforces exactly what the URDF declares (<limit>, <safety_controller>)."""
    import xml.etree.ElementTree as ET

    rig = Rig(parameters, control, info, Q0)
    rig.start()
    limits = rig.hardware.safety.limits
    root = ET.fromstring(robot_description("drill", "real"))
    for j, name in enumerate(limits.names):
        joint = root.find(f"joint[@name='{name}']")
        limit, soft = joint.find("limit"), joint.find("safety_controller")
        assert float(limit.get("lower")) == pytest.approx(limits.lower[j], abs=1e-12)
        assert float(limit.get("upper")) == pytest.approx(limits.upper[j], abs=1e-12)
        assert float(limit.get("velocity")) == pytest.approx(limits.velocity[j], rel=1e-12)
        assert float(soft.get("soft_lower_limit")) == pytest.approx(limits.soft_lower[j], abs=1e-12)
        assert float(soft.get("soft_upper_limit")) == pytest.approx(limits.soft_upper[j], abs=1e-12)
        assert float(soft.get("k_position")) == pytest.approx(limits.k_position[j], rel=1e-12)


def test_a_drive_whose_quick_stop_fails_does_not_keep_the_others_running(parameters, control, info):
    """A quick stop that raises on one drive (a bus error on a real drive) must not skip the
    drives after it; the failure is part of the reported reason."""

    class UnreachableDrive(type(drive_for_joint(parameters, "gantry_x"))):
        def quick_stop(self):
            raise RuntimeError("CAN bus off")

    rig = Rig(parameters, control, info, Q0)
    rig.drives["gantry_x"] = UnreachableDrive(parameters.joint("gantry_x"), parameters.drive)
    rig.drives["gantry_x"].advance(0.0, Q0[0], 0.0)
    rig.start()
    for _ in range(20):
        rig.cycle(np.array(Q0))
    rig.drives["wrist_pitch"].inject_fault("encoder signal lost")
    assert rig.cycle(np.array(Q0)) is ReturnType.ERROR
    reason = rig.hardware.stop_reason
    assert reason.startswith("drive fault on wrist_pitch: encoder signal lost")
    assert "quick stop of gantry_x failed: CAN bus off" in reason
    states = {name: drive.feedback().state for name, drive in rig.drives.items()}
    assert states.pop("gantry_x") is DriveState.ENABLED  # the one that could not be reached
    assert states.pop("wrist_pitch") is DriveState.FAULT
    assert all(state is DriveState.QUICK_STOP for state in states.values()), states


def test_a_drive_that_fails_to_disable_does_not_keep_the_others_enabled(parameters, control, info):
    class StuckDrive(type(drive_for_joint(parameters, "gantry_y"))):
        def disable(self):
            raise RuntimeError("SDO timeout")

    rig = Rig(parameters, control, info, Q0)
    rig.drives["gantry_y"] = StuckDrive(parameters.joint("gantry_y"), parameters.drive)
    rig.drives["gantry_y"].advance(0.0, Q0[1], 0.0)
    rig.start()
    for _ in range(20):
        rig.cycle(np.array(Q0))
    assert rig.hardware.on_deactivate() is CallbackReturn.ERROR
    assert rig.hardware.stop_reason == "disabling gantry_y failed: SDO timeout"
    assert rig.hardware.lifecycle is LifecycleState.INACTIVE
    states = rig.states()
    assert not any(state is DriveState.ENABLED for state in states), states


def test_the_safety_layer_takes_the_planners_limits_in_the_hardwares_joint_order(parameters):
    """One limits type (JointLimits) for planner and safety layer: `select` reorders every array
    to the hardware's joints and refuses an axis it has no limits for, naming it."""
    limits = JointLimits.from_parameters(parameters)
    chosen = limits.select(["wrist_yaw", "gantry_x"])
    assert chosen.names == ("wrist_yaw", "gantry_x")
    for field in (
        "lower",
        "upper",
        "soft_lower",
        "soft_upper",
        "velocity",
        "acceleration",
        "jerk",
        "k_position",
    ):
        full = getattr(limits, field)
        np.testing.assert_array_equal(getattr(chosen, field), [full[3], full[0]])
    with pytest.raises(ValueError, match="no limits for axis elbow"):
        limits.select(["gantry_x", "elbow"])
