"""The drive's own control (drives.drive_control): modes, the master watchdog, halt, homing.

The axis is a point mass (its effective inertia of config/control.yaml, gantry_z's weight along
+d3, which points down) integrated here by Newton, independently of the drive; the stops on the
full MuJoCo robot are test_drive_stops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.drive_control import DriveController, DriveControlSettings, control_settings
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState, StopCategory
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import (
    DEFAULT_PARAMETER_FILE,
    DrillParameters,
    ParameterError,
    axes_for,
    load_parameters,
)
from quirobot_kinematics import forward_kinematics, kinematic_model

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")


class PointMass:
    """One axis as a point mass: m x'' = drive effort + weight; an engaged brake holds it."""

    def __init__(self, params, drive: SimulatedDrive, position: float, substeps: int = 4):
        config = control_configuration(params)
        self.drive = drive
        self.mass = config.joint(drive.name).effective_inertia
        reflected = drive.reflected_inertia
        self.weight = (self.mass - reflected) * params.gravity if drive.name == "gantry_z" else 0.0
        self.dt, self.h = config.dt, config.dt / substeps
        self.substeps = substeps
        self.x, self.v = position, 0.0
        self.path = [position]
        drive.advance(0.0, self.x, self.v)

    def period(self, command=None) -> None:
        self.drive.advance(0.0, self.x, self.v)  # the sync instant
        if command is not None:
            command(self.drive)
        for _ in range(self.substeps):
            effort = self.drive.advance(self.h, self.x, self.v)
            if self.drive.brake_engaged:
                self.v = 0.0
            else:
                self.v += self.h * (effort + self.weight) / self.mass
                self.x += self.h * self.v
        self.path.append(self.x)


def configured(params, name: str, mode: DriveMode, **options) -> SimulatedDrive:
    config = control_configuration(params)
    drive = drive_for_joint(params, name, **options)
    drive.configure_position_loop(config.joint(name).gains, config.dt)
    drive.set_mode(mode)
    return drive


def test_a_command_of_the_other_mode_is_refused_naming_both(parameters):
    drive = configured(parameters, "gantry_x", DriveMode.CST)
    drive.advance(0.0, 0.5, 0.0)
    drive.enable()
    with pytest.raises(DriveError, match="CST mode: command_position needs CSP"):
        drive.command_position(0.5)
    with pytest.raises(DriveError, match="CST mode: start_homing needs HOMING"):
        drive.start_homing()
    with pytest.raises(DriveError, match="not ENABLED"):
        drive.set_mode(DriveMode.CSP)
    drive.disable()
    drive.set_mode(DriveMode.CSP)
    drive.enable()
    with pytest.raises(DriveError, match="CSP mode: command_current needs CST"):
        drive.command_current(1.0)
    fresh = drive_for_joint(parameters, "gantry_x")  # no position loop written
    with pytest.raises(DriveError, match="configure_position_loop"):
        fresh.set_mode(DriveMode.CSP)
    assert fresh.feedback().mode is DriveMode.CST and fresh.feedback().homed


def test_non_finite_position_command_quick_stops(parameters):
    drive = configured(parameters, "wrist_yaw", DriveMode.CSP)
    drive.advance(0.0, 0.0, 0.0)
    drive.enable()
    with pytest.raises(DriveError, match="non-finite velocity"):
        drive.command_position(0.0, float("nan"))
    assert drive.state is DriveState.QUICK_STOP


def _watchdog_controller(parameters, mode=DriveMode.CSP) -> DriveController:
    config = control_configuration(parameters)
    controller = DriveController(control_settings(parameters, "gantry_x"))
    controller.configure_position_loop(config.joint("gantry_x").gains, config.dt)
    controller.set_mode(mode)
    controller.enable(0.5)
    return controller


def test_the_watchdog_trips_after_master_timeout_and_only_then(parameters):
    timeout, dt = parameters.drive.master_timeout, control_configuration(parameters).dt
    fed = _watchdog_controller(parameters)
    for _ in range(1000):  # a master commanding every period: never
        fed.command_position(0.5)
        fed.step(dt, 0.5, 0.0)
    assert fed.stopping is None and fed.fault is None
    silent = _watchdog_controller(parameters)
    silent.command_position(0.5)
    steps = 0
    while silent.stopping is None:
        silent.step(dt, 0.5, 0.0)
        steps += 1
        assert steps < 1000
    # Tripped at the first step after more than master_timeout without a command.
    assert timeout - 1e-9 <= (steps - 1) * dt <= timeout + dt
    assert silent.stopping is StopCategory.RAMP_THEN_OFF
    assert silent.fault.startswith("master lost: no command for")
    for _ in range(200):  # at standstill: brake, hold while it engages, off; nothing restarts
        silent.command_position(0.5)
        silent.step(dt, 0.5, 0.0)
    assert silent.stop_done and not silent.power and silent.brake_holding


def test_in_homing_mode_a_held_drive_and_a_homing_run_each_stop_on_master_silence(parameters):
    """Issue 19 item 2, issue 32 item 4: the master goes silent during homing. A drive holding in
    HOMING mode (not homing) stops itself after master_timeout like any other, and so does a
    homing run: its master's command is start_homing() held (called again every period: the run
    goes on, not restarted), and master_timeout after the last one it stops wherever it is.
    Before: a run went on without its master for its whole time allowance (82 s for gantry_x)."""
    timeout, dt = parameters.drive.master_timeout, control_configuration(parameters).dt
    held = _watchdog_controller(parameters, DriveMode.HOMING)
    steps = 0
    while held.stopping is None and steps < 1000:
        held.step(dt, 0.5, 0.0)
        steps += 1
    assert held.stopping is StopCategory.RAMP_THEN_OFF, "a held drive in HOMING never stopped"
    assert timeout - 1e-9 <= (steps - 1) * dt <= timeout + dt
    assert held.fault.startswith("master lost: no command for")
    homing = parameters.homing["gantry_x"]
    run = _watchdog_controller(parameters, DriveMode.HOMING)
    run.start_homing()  # the switch is never found (switch input False): it searches on
    ramp = homing.switch_speed / homing.acceleration  # s to the search speed
    for _ in range(round(2 * ramp / dt)):  # its master holds the command: the run goes on
        run.start_homing()
        run.step(dt, 0.5, 0.0)
    assert run.stopping is None and run.fault is None
    # At the search speed towards the switch: held, not restarted (a restart ramps up again).
    assert run.reference[1] == pytest.approx(homing.direction * homing.switch_speed)
    steps = 0
    while run.stopping is None and steps < 1000:  # the master goes silent
        run.step(dt, 0.5, 0.0)
        steps += 1
    assert run.stopping is StopCategory.RAMP_THEN_OFF, "the homing run never stopped without its master"
    # Its last command came a period before the silence: tripped the first step after more
    # than master_timeout without one.
    assert timeout - 1e-9 <= steps * dt <= timeout + dt
    assert run.fault.startswith("master lost: no command for") and "during a homing run" in run.fault


def test_an_interrupted_homing_run_ramps_down_and_holds_not_homed(parameters):
    """CiA 402 controlword bit 4 falling during a run (the CiA 402 slave's interrupt_homing): the
    run ends where it is, ramping down at the homing acceleration, then holds under power, not
    homed; a new start_homing() starts a new run from standstill. (No master watchdog here: on
    the bus the drive's master is its SYNC and heartbeat, alive while bit 4 falls.)"""
    config = control_configuration(parameters)
    dt = config.dt
    homing = parameters.homing["gantry_x"]
    run = DriveController(control_settings(parameters, "gantry_x", master_watchdog=False))
    run.configure_position_loop(config.joint("gantry_x").gains, dt)
    run.set_mode(DriveMode.HOMING)
    run.enable(0.5)
    run.start_homing()
    ramp = homing.switch_speed / homing.acceleration  # s from the search speed to standstill
    for _ in range(round(2 * ramp / dt)):
        run.step(dt, 0.5, 0.0)
    assert run.reference[1] == pytest.approx(homing.direction * homing.switch_speed)
    run.interrupt_homing()
    steps = 0
    while run.reference[1] != 0.0:
        run.step(dt, 0.5, 0.0)
        steps += 1
        assert steps * dt <= ramp + 2 * dt, "the interrupted run did not ramp down at the homing acceleration"
    assert steps * dt >= ramp - 2 * dt
    for _ in range(10):
        run.step(dt, 0.5, 0.0)
    assert run.reference[1] == 0.0 and run.power and run.stopping is None and not run.homed
    run.start_homing()  # a new run, from standstill towards the switch again
    run.step(dt, 0.5, 0.0)
    assert 0.0 < homing.direction * run.reference[1] <= homing.acceleration * 2 * dt


def test_halt_ramps_down_and_holds_under_power_until_resume(parameters):
    drive = configured(parameters, "gantry_x", DriveMode.CSP, master_watchdog=True)
    axis = PointMass(parameters, drive, 0.5)
    drive.enable()
    speed, acceleration, dt = 0.5, parameters.joint("gantry_x").acceleration, axis.dt
    for k in range(200):  # up to 0.5 m/s at the joint's acceleration, then steady, commanded each period
        t, ramp = k * dt, speed / acceleration
        x = 0.5 + (0.5 * acceleration * t * t if t < ramp else 0.5 * speed * ramp + speed * (t - ramp))
        v = min(acceleration * t, speed)
        axis.period(lambda d, x=x, v=v: d.command_position(x, v))
    x0 = axis.x
    drive.halt()
    for _ in range(300):  # the host keeps talking (the watchdog must not fire) but is ignored
        axis.period(lambda d: d.command_position(2.0, speed))
    fb = drive.feedback()
    assert fb.state is DriveState.ENABLED and fb.halted and fb.fault is None
    assert drive.control.power and not drive.brake_engaged  # held under power (category 2)
    deceleration = parameters.drive.quick_stop_deceleration["gantry_x"]
    assert axis.x - x0 == pytest.approx(speed**2 / (2.0 * deceleration), rel=0.02)
    assert abs(axis.v) < 1e-3
    held = axis.x
    drive.resume()
    assert not drive.feedback().halted
    for k in range(200):  # follows again, from the held position
        goal = held + 0.01 * min(k / 100, 1.0)
        axis.period(lambda d, x=goal: d.command_position(x))
    assert axis.x == pytest.approx(held + 0.01, abs=1e-4)
    drive.quick_stop()
    with pytest.raises(DriveError, match="reset_fault"):
        drive.resume()


def test_homing_finds_the_switch_moving_away_from_the_patient(parameters):
    """gantry_z with an incremental encoder, 15 mm below its switch: it searches upwards (-d3),
    backs off the switch slowly, and reads the home offset at the switch's edge."""
    homing = parameters.homing["gantry_z"]
    start = homing.switch_position + 0.015
    drive = configured(parameters, "gantry_z", DriveMode.HOMING, absolute_encoder=False)
    axis = PointMass(parameters, drive, start)
    fb = drive.feedback()
    assert not fb.homed and fb.mode is DriveMode.HOMING
    assert fb.position == pytest.approx(0.0, abs=1e-5)  # counts from power-up, not the joint
    drive.enable()
    drive.start_homing()
    periods = 0
    while not drive.feedback().homed:
        axis.period()
        periods += 1
        assert periods < 3000, "homing did not finish in 3 s"
    for _ in range(100):
        axis.period()
    fb = drive.feedback()
    path = np.array(axis.path)
    # Never towards the patient (down, +d3) beyond where it started but for the sag at enable
    # (about 0.09 mm while the PID's integrator builds the weight's current: the drive has no
    # gravity feed-forward in homing), never to the end of travel.
    assert path.max() <= start + 1e-4
    assert path.min() > parameters.joint("gantry_z").lower
    # Passed the switch by the search's braking distance, then off it at the zero speed.
    overtravel = homing.switch_speed**2 / (2.0 * homing.acceleration)
    assert homing.switch_position - path.min() == pytest.approx(overtravel, rel=0.1)
    # The reported position is the joint coordinate now: the edge latched within a period.
    counts = 2.0 * math.pi / (parameters.drive.encoder_counts_per_rev * drive.transmission.ratio)
    dt = control_configuration(parameters).dt
    assert fb.position == pytest.approx(axis.x, abs=homing.zero_speed * dt + 2 * counts)
    assert fb.state is DriveState.ENABLED and drive.control.power and abs(axis.v) < 1e-3
    # A drive fault may have lost the count: homed again only by homing, not by the reset.
    drive.inject_fault("encoder signal lost")
    drive.reset_fault()
    assert not drive.feedback().homed


def test_homing_from_on_the_switch_only_backs_off(parameters):
    homing = parameters.homing["gantry_x"]
    start = homing.switch_position - 0.002  # inside the switch's range
    drive = configured(parameters, "gantry_x", DriveMode.HOMING, absolute_encoder=False)
    axis = PointMass(parameters, drive, start)
    drive.enable()
    drive.start_homing()
    for _ in range(1500):
        axis.period()
    fb = drive.feedback()
    assert fb.homed
    assert min(axis.path) >= start - 1e-5  # no search towards the end of travel
    assert fb.position == pytest.approx(axis.x, abs=1e-5)


def test_every_homing_motion_moves_the_tip_away_from_the_patient(parameters):
    """From the working pose (drill pointing down at the patient, feed extended), a small motion
    of each axis in its homing direction never lowers the tip; the feed retracts first, gantry_z
    lifts next, the horizontal axes move last."""
    model = kinematic_model(parameters.path)
    q = np.array([1.0, 1.0, 0.5, 0.3, math.pi / 2])
    feed = 0.02

    def tip_height(q, feed) -> float:
        return float(np.asarray(forward_kinematics(q, model, feed=feed))[2, 3])

    for axis in DRILL_AXES:
        step = 0.01 * parameters.homing[axis].direction
        moved_q, moved_feed = q.copy(), feed
        if axis == DrillParameters.feed_joint:
            moved_feed += step
        else:
            moved_q[DRILL_AXES.index(axis)] += step
        assert tip_height(moved_q, moved_feed) >= tip_height(q, feed) - 1e-12, axis
    order = parameters.homing_order
    assert order[:2] == (DrillParameters.feed_joint, "gantry_z")
    assert set(order[-2:]) == {"gantry_x", "gantry_y"}


def test_a_homing_switch_without_room_to_stop_is_refused(tmp_path):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw["homing"]["gantry_z"]["switch_position"]["value"] = 0.001  # 1 mm from the top end
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match="homing.gantry_z.switch_position.*room to stop"):
        load_parameters(path)
    raw["homing"]["gantry_z"]["switch_position"]["value"] = 0.005
    raw["homing"]["order"] = ["gantry_z", "gantry_x"]
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match="homing.order: must list every axis once"):
        load_parameters(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [("quick_stop_deceleration", 0.0), ("max_current", float("nan")), ("master_timeout", -1.0)],
)
def test_bad_control_settings_are_refused_by_name(parameters, field, value):
    good = control_settings(parameters, "gantry_x")
    values = {f: getattr(good, f) for f in good.__dataclass_fields__} | {field: value}
    with pytest.raises(ValueError, match=field):
        DriveControlSettings(**values)


@pytest.mark.parametrize("stop", ["quick_stop", "controllable fault"])
def test_a_fault_reset_is_refused_until_the_stop_is_complete(parameters, stop):
    """Issue 19 item 1 on one drive: gantry_z moving down at 0.5 m/s, a category 1 stop (a quick
    stop, or a fault the drive still controls); reset_fault() during the ramp and while the brake
    engages under power raises "stop still in progress" and changes nothing (still stopping under
    power); the axis stops within v^2 / (2 a) (Newton here, not the drive's model) with the brake
    holding, and then the reset goes through."""
    drive = configured(parameters, "gantry_z", DriveMode.CSP)
    axis = PointMass(parameters, drive, 0.3)
    drive.enable()
    speed, target, v = 0.5, 0.3, 0.0
    for _ in range(300):  # ramp up at 5 m/s^2, then cruise
        v = min(speed, v + 5.0 * axis.dt)
        target += v * axis.dt
        axis.period(lambda d, target=target, v=v: d.command_position(target, v))
    assert axis.v == pytest.approx(speed, rel=0.02)
    start, v0 = axis.x, axis.v
    if stop == "quick_stop":
        drive.quick_stop()
    else:
        drive.inject_fault("over-temperature", controllable=True)
    refused = 0
    for _ in range(400):
        feedback = drive.feedback()
        if feedback.stopping:
            with pytest.raises(DriveError, match="stop still in progress"):
                drive.reset_fault()
            refused += 1
            assert drive.control.power and drive.feedback().state is feedback.state  # unchanged
        axis.period()
    assert refused > 0 and not drive.feedback().stopping
    assert drive.brake_engaged and not drive.control.power
    predicted = v0**2 / (2 * parameters.drive.quick_stop_deceleration["gantry_z"])
    assert axis.x - start == pytest.approx(predicted, rel=0.02, abs=2 * v0 * axis.dt)
    drive.reset_fault()
    assert drive.feedback().state is DriveState.DISABLED
