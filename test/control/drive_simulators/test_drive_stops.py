"""The drives stop by themselves, on the MuJoCo plant: category 1 quick stop, gantry_z held against
gravity, the master watchdog, and CSP (the drive's PID) against the host's PID in CST.

Every drive is a SimulatedDrive (drive_simulators.simulated_drive) running the drive's own DriveController
(drives.drive_control) with its joint's gains of config/control.yaml; the plant is the robot in
MuJoCo (simulation.plant), stepped as the closed-loop simulation steps it: each control period the
drives latch their encoders (plant.sense), the host commands, then the physics substeps run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState, StopCategory
from quirobot_control.drives.pid import PID
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

#: The pose the tests start from: mid-workspace, the drill pointing down (report coordinates).
START = (0.3, 1.0, 0.5, 0.0, math.pi / 2, 0.0)
SETTLE_PERIODS = 100  # the holding PIDs settle their integrators against gravity (0.1 s)


class Rig:
    """Six drives on the MuJoCo plant; the test is the host (or, for a frozen master, is not)."""

    def __init__(self, params, urdf, *, mode=DriveMode.CSP, master_watchdog=False):
        self.params = params
        self.config = control_configuration(params)
        self.dt = self.config.dt
        self.drives: list[SimulatedDrive] = [
            drive_for_joint(params, name, master_watchdog=master_watchdog) for name in DRILL_AXES
        ]
        for drive in self.drives:
            drive.configure_position_loop(self.config.joint(drive.name).gains, self.dt)
            drive.set_mode(mode)
        armature = np.array([drive.reflected_inertia for drive in self.drives])
        self.plant = MujocoPlant(params, armature, self.dt / self.config.physics_substeps, urdf)
        self.plant.reset(np.array(START))
        self.plant.sense(self.drives)
        for drive in self.drives:
            drive.enable()
        self.mode = mode
        self.host_pids = [PID(self.config.joint(name).gains, self.dt) for name in DRILL_AXES]
        for pid, drive in zip(self.host_pids, self.drives, strict=True):
            pid.reset(drive.feedback().position)  # as the drive's PID at enable()
        self.time = 0.0

    def period(self, targets=None) -> np.ndarray:
        """One control period; targets: (6,) of (position, velocity), or None (the host is silent).
        Returns the joint positions at the period's sync instant (what the drives sampled)."""
        self.plant.sense(self.drives)
        at_sync = self.plant.position.copy()
        if targets is not None:
            for drive, pid, (position, velocity) in zip(self.drives, self.host_pids, targets, strict=True):
                if self.mode is DriveMode.CSP:
                    drive.command_position(position, velocity)
                else:
                    drive.command_current(pid.update(position, drive.feedback().position, velocity))
        self.plant.step_period(self.drives, self.config.physics_substeps)
        self.time += self.dt
        return at_sync

    def hold(self, periods: int) -> None:
        for _ in range(periods):
            self.period([(x, 0.0) for x in START])


def cruise_reference(params, axis: int, direction: float = 1.0):
    """The joint's planned motion from START: its acceleration limit up to its velocity limit."""
    joint = params.joints[axis]
    a, v = joint.acceleration, joint.velocity
    start, ramp = START[axis], v / a

    def reference(t: float) -> tuple[float, float]:
        if t < ramp:
            return start + direction * 0.5 * a * t * t, direction * a * t
        return start + direction * (0.5 * a * ramp * ramp + v * (t - ramp)), direction * v

    return reference


def targets_with(axis: int, target: tuple[float, float]) -> list[tuple[float, float]]:
    targets = [(x, 0.0) for x in START]
    targets[axis] = target
    return targets


@pytest.fixture(scope="module")
def rig_for(parameters, exported_urdf):
    def make(**options) -> Rig:
        return Rig(parameters, exported_urdf, **options)

    return make


# gantry_z moves down (+d3): gravity works against the deceleration, the harder direction.
@pytest.mark.parametrize("axis_name", ["gantry_x", "gantry_z"])
def test_quick_stop_from_1_m_s_stops_where_the_deceleration_predicts(parameters, rig_for, axis_name):
    axis = DRILL_AXES.index(axis_name)
    rig = rig_for()
    drive = rig.drives[axis]
    rig.hold(SETTLE_PERIODS)
    reference = cruise_reference(parameters, axis)
    for k in range(150):  # 0.1 s of acceleration, then 50 ms at 1 m/s
        rig.period(targets_with(axis, reference(k * rig.dt)))
    rig.plant.sense(rig.drives)
    x0, v0 = rig.plant.position[axis], rig.plant.velocity[axis]
    assert v0 == pytest.approx(1.0, abs=0.01)
    drive.quick_stop()  # category 1, the default
    deceleration = parameters.drive.quick_stop_deceleration[axis_name]
    standstill = drive.control.settings.standstill_velocity
    following_limit = rig.config.joint(axis_name).following_error
    following, brake_commanded_at, engaged_velocity = 0.0, None, None
    ramp_done_at = None
    for k in range(300):
        at_sync = rig.period(targets_with(axis, reference((150 + k) * rig.dt)))  # ignored now
        if drive.control.power:  # the drive's own following error, at its sample
            following = max(following, abs(drive.control.reference[0] - at_sync[axis]))
        if ramp_done_at is None and drive.control.reference[1] == 0.0:
            ramp_done_at = k * rig.dt
        if brake_commanded_at is None and drive.control.brake:
            brake_commanded_at = k * rig.dt
        if engaged_velocity is None and drive.brake_engaged:
            engaged_velocity = rig.plant.velocity[axis]
    distance = rig.plant.position[axis] - x0
    predicted = v0**2 / (2.0 * deceleration)
    # No following-error trip: the ramp never saturates the current (half the capability).
    assert following < 0.1 * following_limit, following
    # The stop distance v0^2 / (2 a); 1 % covers the loop's lag and the reference speed being the
    # commanded one (1 m/s) rather than the measured v0.
    assert distance == pytest.approx(predicted, rel=0.01)
    assert ramp_done_at == pytest.approx(v0 / deceleration, abs=2 * rig.dt)
    # The brake is commanded only at standstill, after the ramp, and holds an axis at rest.
    assert brake_commanded_at >= ramp_done_at
    assert abs(engaged_velocity) <= standstill
    fb = drive.feedback()
    assert fb.state is DriveState.QUICK_STOP and fb.fault is None
    assert not drive.control.power and fb.current == 0.0 and drive.brake_engaged
    # Latched: no automatic reset, commands ignored, the axis stays where it stopped.
    held = rig.plant.position[axis]
    with pytest.raises(DriveError, match="reset_fault"):
        drive.enable()
    for _ in range(100):
        rig.period(targets_with(axis, (START[axis], 0.0)))
    assert drive.feedback().state is DriveState.QUICK_STOP
    assert abs(rig.plant.position[axis] - held) < 2e-5


def _drop_after_stop(rig: Rig, stop) -> tuple[float, SimulatedDrive]:
    """Max downward (+d3) travel of gantry_z after `stop(drive)`, held at START against gravity."""
    axis = DRILL_AXES.index("gantry_z")
    drive = rig.drives[axis]
    rig.hold(SETTLE_PERIODS)
    rig.plant.sense(rig.drives)
    z0 = rig.plant.position[axis]
    stop(drive)
    drop = 0.0
    for _ in range(100):
        rig.hold(1)
        drop = max(drop, rig.plant.position[axis] - z0)
    return drop, drive


@pytest.mark.parametrize("mode", [DriveMode.CSP, DriveMode.CST])
def test_gantry_z_quick_stop_holding_against_gravity_does_not_drop(rig_for, mode):
    """Category 1 holds the load under power until the brake holds: the bit goes < 0.05 mm deeper.
    Category 0 (the stop every quick stop was before: torque off, then the brake) lets it fall for
    the brake's engage time."""
    drop, drive = _drop_after_stop(rig_for(mode=mode), lambda d: d.quick_stop())
    assert drive.brake_engaged and not drive.control.power
    assert drop < 5e-5, drop
    drop_0, drive_0 = _drop_after_stop(rig_for(mode=mode), lambda d: d.quick_stop(StopCategory.TORQUE_OFF))
    assert drive_0.brake_engaged
    assert drop_0 > 20 * max(drop, 1e-6) and drop_0 > 2e-4, drop_0  # about 1.2 mm


def _drop_with_silent_host(rig: Rig, stop) -> tuple[float, SimulatedDrive, list[tuple[bool, bool]]]:
    """As _drop_after_stop, the host silent after `stop(drive)` (deactivated, or its drive in FAULT
    refusing commands); also (power on, brake holding) of gantry_z's drive each period after it."""
    axis = DRILL_AXES.index("gantry_z")
    drive = rig.drives[axis]
    rig.hold(SETTLE_PERIODS)
    rig.plant.sense(rig.drives)
    z0 = rig.plant.position[axis]
    stop(drive)
    drop, trace = 0.0, []
    for _ in range(100):
        rig.period(None)
        drop = max(drop, rig.plant.position[axis] - z0)
        trace.append((drive.control.power, drive.brake_engaged))
    return drop, drive, trace


@pytest.mark.parametrize("mode", [DriveMode.CSP, DriveMode.CST])
def test_gantry_z_disable_and_a_controllable_fault_brake_under_power(rig_for, mode):
    """disable() (0x605C = 1) and a fault the drive still controls (0x605E = 2: over-temperature)
    hold gantry_z under power until its brake holds, then switch off: the bit goes < 0.05 mm
    deeper. A power-stage fault is category 0: it falls for the brake's engage time (~1.2 mm)."""
    drops = {}
    for label, stop, state in (
        ("disable", lambda d: d.disable(), DriveState.DISABLED),
        ("fault", lambda d: d.inject_fault("over-temperature", controllable=True), DriveState.FAULT),
        ("power", lambda d: d.inject_fault("over-current"), DriveState.FAULT),
    ):
        drop, drive, trace = _drop_with_silent_host(rig_for(mode=mode), stop)
        drops[label] = drop
        assert drive.feedback().state is state and drive.brake_engaged and not drive.control.power
        if label != "power":
            # Power stays on until the brake holds; it is off from then on (the brake is never
            # released again on the way).
            off = [k for k, (power, _) in enumerate(trace) if not power]
            assert off and off[0] > 0 and trace[off[0] - 1][1] and all(not p for p, _ in trace[off[0] :])
            assert drop < 5e-5, (label, drop)
        else:
            assert not trace[0][0]  # torque off at once
    assert drops["power"] > 20 * max(drops["disable"], drops["fault"], 1e-6) and drops["power"] > 2e-4, drops
    # The fault stays latched: commands are refused, enable() needs the explicit reset.
    with pytest.raises(DriveError, match="reset_fault"):
        drive.enable()


@pytest.mark.parametrize("mode", [DriveMode.CSP, DriveMode.CST])
def test_a_silent_master_stops_every_drive_within_its_timeout(parameters, rig_for, mode):
    timeout = parameters.drive.master_timeout
    axis = DRILL_AXES.index("gantry_x")
    rig = rig_for(master_watchdog=True, mode=mode)
    rig.hold(SETTLE_PERIODS)
    reference = cruise_reference(parameters, axis)
    for k in range(150):
        rig.period(targets_with(axis, reference(k * rig.dt)))
    last_command = rig.time  # the master freezes: no command from here on
    rig.plant.sense(rig.drives)
    x0, v0 = rig.plant.position[axis], rig.plant.velocity[axis]
    detected: dict[str, float] = {}
    stopped_at = None
    for _ in range(300):
        rig.period(None)
        for drive in rig.drives:
            if drive.name not in detected and drive.state is DriveState.QUICK_STOP:
                detected[drive.name] = rig.time - last_command
        if stopped_at is None and rig.drives[axis].control.stop_done:
            stopped_at = rig.time - last_command
    # Every drive noticed by itself, between the timeout and the next period after it.
    assert set(detected) == set(DRILL_AXES)
    for name, after in detected.items():
        assert timeout <= after <= timeout + 2 * rig.dt, (name, after)
        fault = rig.drives[DRILL_AXES.index(name)].feedback().fault
        assert fault.startswith("master lost: no command for"), fault
    # The moving axis ran on its last target's speed until the timeout, then ramped down.
    deceleration = parameters.drive.quick_stop_deceleration["gantry_x"]
    travel = rig.plant.position[axis] - x0
    predicted = v0 * timeout + v0**2 / (2.0 * deceleration)
    assert travel == pytest.approx(predicted, abs=v0 * 2 * rig.dt + 0.01 * predicted)
    brake = parameters.drive.brake_engage_time
    assert stopped_at <= timeout + v0 / deceleration + brake + 0.03, stopped_at
    assert all(d.brake_engaged and not d.control.power for d in rig.drives)
    # Nothing restarts by itself: commands are ignored until reset_fault() and enable().
    held = rig.plant.position.copy()
    for _ in range(20):
        rig.hold(1)
    assert all(d.state is DriveState.QUICK_STOP for d in rig.drives)
    np.testing.assert_allclose(rig.plant.position, held, atol=2e-5)
    for drive in rig.drives:
        drive.reset_fault()
        drive.enable()
    rig.plant.sense(rig.drives)
    rig.period([(x, 0.0) for x in rig.plant.position])
    assert all(d.state is DriveState.ENABLED and d.feedback().fault is None for d in rig.drives)


def test_a_master_frozen_mid_feed_moves_the_tip_less_than_0_2_mm(parameters, rig_for):
    """The feed at its full speed (10 mm/s, faster than any task's feed); the master freezes: every
    drive stops by itself and the tip moves less than 0.2 mm after the last command."""
    feed = DRILL_AXES.index("drill_feed")
    drill = parameters.drill
    rig = rig_for(master_watchdog=True)
    rig.hold(SETTLE_PERIODS)
    ramp = drill.feed.velocity / drill.feed.acceleration
    for k in range(int(round(1.5 * ramp / rig.dt))):
        t = k * rig.dt
        if t < ramp:
            target = (START[feed] + 0.5 * drill.feed.acceleration * t * t, drill.feed.acceleration * t)
        else:
            target = (
                START[feed] + 0.5 * drill.feed.velocity * ramp + drill.feed.velocity * (t - ramp),
                drill.feed.velocity,
            )
        rig.period(targets_with(feed, target))
    rig.plant.forward_kinematics()
    tip_at_fault = rig.plant.tip.copy()
    v0 = rig.plant.velocity[feed]
    assert v0 == pytest.approx(drill.feed.velocity, rel=0.02)
    for _ in range(300):
        rig.period(None)
    rig.plant.forward_kinematics()
    assert all(d.state is DriveState.QUICK_STOP and d.control.stop_done for d in rig.drives)
    travel = float(np.linalg.norm(rig.plant.tip - tip_at_fault))
    deceleration = parameters.drive.quick_stop_deceleration["drill_feed"]
    expected = v0 * parameters.drive.master_timeout + v0**2 / (2.0 * deceleration)
    assert travel < 2e-4, travel
    assert travel == pytest.approx(expected, rel=0.2)  # the feed's run-on and ramp, nothing else


def test_csp_runs_the_host_pid_law_in_the_drive(parameters, rig_for):
    """The same planned motion, closed by the host's PID (CST) and by the drive's (CSP) with the
    same gains: both sample the same encoder at the same instant, so they track alike."""
    axis = DRILL_AXES.index("gantry_y")
    reference = cruise_reference(parameters, axis, direction=-1.0)
    errors = {}
    for mode in (DriveMode.CST, DriveMode.CSP):
        rig = rig_for(mode=mode)
        rig.hold(SETTLE_PERIODS)
        error = []
        for k in range(200):
            at_sync = rig.period(targets_with(axis, reference(k * rig.dt)))
            error.append(at_sync[axis] - reference(k * rig.dt)[0])
        errors[mode] = np.array(error)
    cst, csp = errors[DriveMode.CST], errors[DriveMode.CSP]
    assert np.abs(cst).max() > 1e-5  # a real motion: the loop lags the accelerating reference
    # The same law on the same samples: equal to rounding (measured: bit for bit).
    np.testing.assert_allclose(csp, cst, rtol=0.0, atol=1e-9)
