"""CANopen benchmark: the hardware component's position loop over CanopenDrive, per SYNC period.

    python bench/canopen_loop.py [--periods 1 2 4] [--modes csp cst] [--step 0.001] [--save [FILE]]

QuirobotHardware (1 kHz, the gains of config/control.yaml) runs on six CanopenDrives talking to
six simulated CiA 402 drives over python-can's virtual bus. The drives get a SYNC (apply the
latest target torque, send feedback) every `period` control cycles, so the loop sees feedback
and its torque takes effect every period ms, as on a bus with that SYNC period. A position step
of `--step` m on gantry_x: settling (within 1 % of the step), overshoot, or the safety stop that
ended it. Also the time per SYNC cycle (six nodes, both networks in this process) against the
time of one SimulatedDrive.advance of the same period measured in the same run.

Modes: CST, the host's PID sends currents (its gains were designed for 1 kHz feedback: it needs
a SYNC every 1 ms control period); CSP (the real motors' mode), the same PID runs in each drive
at 1 kHz on its own encoder and the host sends targets, interpolated by the drive over each SYNC
period: this shows why canopen.sync_period can be 2 ms (and what 4 ms would cost).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import uuid

import can
import canopen
import numpy as np
from bench_results import add_save_option, saved_output

from quirobot_control.drive_simulators.canopen_slave import simulator_for_axis
from quirobot_control.drive_simulators.canopen_slave.joint_model import JointModel
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.canopen_master import canopen_drives_for_robot
from quirobot_control.drives.interface import DriveMode
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.hardware.lifecycle import CallbackReturn, ReturnType
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

START = {
    "gantry_x": 0.5,
    "gantry_y": 0.5,
    "gantry_z": 0.5,
    "wrist_yaw": 1.0,
    "wrist_pitch": 0.3,
    "drill_feed": 0.02,
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run(period_cycles: int, step: float, duration: float, mode: DriveMode) -> dict:
    params = load_parameters()
    control = control_configuration(params)
    sync_period = period_cycles * control.dt
    params = dataclasses.replace(params, canopen=dataclasses.replace(params.canopen, sync_period=sync_period))
    channel = f"bench-{uuid.uuid4().hex}"
    networks = []
    for _ in range(2):
        network = canopen.Network(can.Bus(interface="virtual", channel=channel))
        network.NOTIFIER_CYCLE = 0.01
        networks.append(network.connect())
    slave, master = networks
    simulators = {
        axis: simulator_for_axis(
            params, axis, inertia=control.joint(axis).effective_inertia, position=START[axis]
        )
        for axis in DRILL_AXES
    }
    for simulator in simulators.values():
        simulator.attach(slave)
    clock = Clock()
    drives = canopen_drives_for_robot(params, master, clock=clock, mode=mode, homed=True)
    sync_times = []

    def sync() -> None:
        targets = {name: drive.feedback_count + 1 for name, drive in drives.items()}
        begin = time.perf_counter()
        master.sync.transmit()
        for name, drive in drives.items():
            if not drive.wait_for_feedback(targets[name], 2.0):
                raise RuntimeError(f"no feedback from {name}")
        sync_times.append(time.perf_counter() - begin)

    try:
        sync()
        hardware = QuirobotHardware(params, control, lambda name: drives[name], drive_mode=mode)
        hardware.on_init(hardware_info_from_urdf(robot_description("drill", "real")))
        hardware.on_configure()
        if hardware.on_activate() is not CallbackReturn.SUCCESS:
            return {"stop": hardware.stop_reason}
        target = np.array([START[a] for a in DRILL_AXES])
        target[0] += step
        errors, stop = [], None
        for k in range(round(duration / control.dt)):
            t = k * control.dt
            clock.now = t
            if k % period_cycles == 0:
                sync()
            if hardware.read(t, control.dt) is not ReturnType.OK:
                stop = f"{t * 1e3:.0f} ms: {hardware.stop_reason}"
                break
            hardware.set_commands(t, target, np.zeros(len(target)))
            if hardware.write(t, control.dt) is not ReturnType.OK:
                stop = f"{t * 1e3:.0f} ms: {hardware.stop_reason}"
                break
            errors.append(simulators["gantry_x"].joint.position - target[0])
    finally:
        master.disconnect()
        slave.disconnect()
    errors = np.array(errors)
    outside = np.nonzero(np.abs(errors) > 0.01 * abs(step))[0]
    settled = None if stop or len(outside) == len(errors) else (outside[-1] + 1) * control.dt
    return {
        "stop": stop,
        "settling": settled,
        "overshoot": float(errors.max() / step) if len(errors) else None,
        "sync_time": float(np.median(sync_times)),
        "sync_period": sync_period,
    }


def run_direct(step: float, duration: float, mode: DriveMode) -> dict:
    """The same loop on SimulatedDrives called directly (no bus): the baseline."""
    params = load_parameters()
    control = control_configuration(params)
    drives = {axis: drive_for_joint(params, axis) for axis in DRILL_AXES}
    joints = {}
    for axis in DRILL_AXES:
        damping = params.drill.feed.damping if axis == "drill_feed" else params.joint(axis).damping
        joints[axis] = JointModel(control.joint(axis).effective_inertia, damping, position=START[axis])
        drives[axis].advance(0.0, START[axis], 0.0)
    hardware = QuirobotHardware(params, control, lambda name: drives[name], drive_mode=mode)
    hardware.on_init(hardware_info_from_urdf(robot_description("drill", "real")))
    hardware.on_configure()
    hardware.on_activate()
    target = np.array([START[a] for a in DRILL_AXES])
    target[0] += step
    errors = []
    for k in range(round(duration / control.dt)):
        t = k * control.dt
        hardware.read(t, control.dt)
        hardware.set_commands(t, target, np.zeros(len(target)))
        hardware.write(t, control.dt)
        for axis in DRILL_AXES:
            joint = joints[axis]
            joint.step(drives[axis].advance(control.dt, joint.position, joint.velocity), control.dt)
            drives[axis].advance(0.0, joint.position, joint.velocity)
        errors.append(joints["gantry_x"].position - target[0])
    errors = np.array(errors)
    outside = np.nonzero(np.abs(errors) > 0.01 * abs(step))[0]
    return {"settling": (outside[-1] + 1) * control.dt, "overshoot": float(errors.max() / step)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--periods", type=int, nargs="+", default=[1, 2, 4], help="SYNC every N control cycles"
    )
    parser.add_argument(
        "--modes", nargs="+", choices=("csp", "cst"), default=["csp", "cst"], help="drive modes to run"
    )
    parser.add_argument("--step", type=float, default=0.001, help="gantry_x position step, m")
    parser.add_argument("--duration", type=float, default=0.5, help="simulated time, s")
    add_save_option(parser, "canopen_loop.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        _run(args)


def _run(args: argparse.Namespace) -> None:
    for name in args.modes:
        _run_mode(args, DriveMode[name.upper()])


def _run_mode(args: argparse.Namespace, mode: DriveMode) -> None:
    params = load_parameters()
    direct = run_direct(args.step, args.duration, mode)
    print(
        f"{mode.name}: SimulatedDrive directly, no bus ({args.step * 1e3:g} mm step on gantry_x): settles in "
        f"{direct['settling'] * 1e3:.1f} ms, overshoot {100 * direct['overshoot']:.1f} %"
    )
    reference = drive_for_joint(params, "gantry_x")
    reference.enable()
    reference.command_current(1.0)
    for cycles in args.periods:
        result = run(cycles, args.step, args.duration, mode)
        dt = result.get("sync_period", cycles * 1e-3)
        begin = time.perf_counter()
        for _ in range(200):
            reference.advance(dt, 0.0, 0.0)
        advance_time = (time.perf_counter() - begin) / 200
        if result.get("stop") and result.get("settling") is None and "sync_time" not in result:
            print(f"{mode.name}: SYNC {cycles} ms: activation failed: {result['stop']}")
            continue
        if result["stop"]:
            outcome = f"safety stop at {result['stop']}"
        elif result["settling"] is None:
            outcome = f"not settled within {args.duration:g} s"
        else:
            outcome = (
                f"settles in {result['settling'] * 1e3:.1f} ms, overshoot {100 * result['overshoot']:.1f} %"
            )
        print(
            f"{mode.name}: SYNC every {cycles} ms ({args.step * 1e3:g} mm step on gantry_x): {outcome}; "
            f"one SYNC cycle of 6 nodes = {result['sync_time'] / advance_time:.1f} x one "
            f"SimulatedDrive.advance({dt * 1e3:g} ms) ({result['sync_time'] * 1e6:.0f} us)"
        )


if __name__ == "__main__":
    main()
