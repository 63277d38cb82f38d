"""Control benchmark: controller cost per 1 kHz cycle, simulation speed, the report's step tests.

    python bench/control.py [--cycles N] [--full] [--save [FILE]]

1. Controller computation per cycle for all six joints (QuirobotHardware read + commands +
   write: safety layer, six PIDs, feed-forward), p50/p99/max over N cycles on simulated drives;
   target p99 <= 200 us. Printed with the ratio to one MuJoCo physics step of the same robot
   measured in the same run (a machine-independent yardstick).
2. The closed-loop incision (shallow CI version by default, the shipped task with --full):
   simulated time / wall time (target >= 1) and the metrics against the targets. The speed figure
   is kept as a ratio against MuJoCo alone: the closed loop's wall time over the wall time of the
   same number of bare MuJoCo steps of the robot, measured in the same run (machine-independent;
   no test asserts wall-clock speed).
3. The report's step tests (ch.7: 0.1 m / 0.08 rad and 0.5 m / 1 rad): settling time and
   overshoot with the profile-position reference, next to the report's settling times and the
   physical minimum time under the current limit alone, and the raw (unprofiled) step.
"""

from __future__ import annotations

import argparse
import math
import time

import mujoco
import numpy as np
from bench_results import add_save_option, saved_output

from quirobot_control.analysis.step_response import simulate_step
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.simulation.incision import TARGETS, run_task, targets_met
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

REPORT_SETTLING = {"small": "0.014-0.036 s", "large": "0.022-0.05 s"}


def controller_cycle(params, control, cycles: int) -> np.ndarray:
    drives = {name: drive_for_joint(params, name) for name in DRILL_AXES}
    q = np.array([0.8, 0.9, 1.0, 1.5, 0.5, 0.01])
    for j, drive in enumerate(drives.values()):
        drive.advance(0.0, q[j], 0.0)
    # Six PIDs on the host: CST, the closed-loop simulation's mode (control.yaml drive_mode.simulation).
    hardware = QuirobotHardware(
        params, control, lambda name: drives[name], drive_mode=control.simulation_drive_mode
    )
    hardware.on_init(hardware_info_from_urdf(robot_description("drill", "real")))
    hardware.on_configure()
    hardware.on_activate()
    velocity = np.zeros(6)
    effort = np.zeros(6)
    times = np.empty(cycles)
    for k in range(cycles):
        command = q + 1e-6 * math.sin(k * 1e-3)
        start = time.perf_counter()
        hardware.read(k * 1e-3, 1e-3)
        hardware.set_commands(k * 1e-3, command, velocity, None, effort)
        hardware.write(k * 1e-3, 1e-3)
        times[k] = time.perf_counter() - start
    return times


def physics_step(params, control, steps: int) -> float:
    armature = np.array([drive_for_joint(params, n).reflected_inertia for n in DRILL_AXES])
    plant = MujocoPlant(params, armature, control.dt / control.physics_substeps)
    plant.reset(np.array([0.8, 0.9, 1.0, 1.5, 0.5, 0.01]))
    start = time.perf_counter()
    for _ in range(steps):
        mujoco.mj_step(plant.model, plant.data)
    return (time.perf_counter() - start) / steps


def minimum_time_current_limited(params, control, joint, step):
    """Bang-bang time with the full current and no speed limit: 2*sqrt(step / a_max)."""
    drive = drive_for_joint(params, joint)
    force = (
        drive.motor.max_current * drive.motor.torque_constant * drive.transmission.ratio * drive.efficiency
    )
    return 2.0 * math.sqrt(step / (force / control.joint(joint).effective_inertia))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20000, help="controller cycles to time")
    parser.add_argument(
        "--full", action="store_true", help="run the shipped incision task (about 29 s simulated)"
    )
    add_save_option(parser, "control.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        _run(args)


def _run(args: argparse.Namespace) -> None:
    params = load_parameters()
    control = control_configuration(params)

    times = controller_cycle(params, control, args.cycles)
    step_time = physics_step(params, control, 20000)
    p50, p99 = np.percentile(times, [50, 99])
    print("1. controller per 1 kHz cycle, all 6 joints (read + commands + write)")
    print(f"   p50 {p50 * 1e6:7.1f} us   p99 {p99 * 1e6:7.1f} us   max {times.max() * 1e6:7.1f} us")
    print(f"   one MuJoCo physics step of the robot: {step_time * 1e6:.2f} us (same run)")
    print(
        f"   p99 / physics step = {p99 / step_time:.1f}; "
        f"target p99 <= {TARGETS['controller_p99'] * 1e6:.0f} us: "
        f"{'met' if p99 <= TARGETS['controller_p99'] else 'MISSED'}"
    )

    print("\n2. closed-loop incision" + (" (shipped task)" if args.full else " (CI: 3 mm at 2 mm/s)"))
    kwargs = {} if args.full else {"depth": 0.003, "feed_rate": 0.002}
    result = run_task("incision", params, control=control, **kwargs)
    met = targets_met(result.metrics)
    m = result.metrics.as_dict()  # rows by name
    for key, scale, unit in (
        ("entry_error", 1e6, "um"),
        ("lateral_deviation", 1e6, "um"),
        ("depth_overshoot", 1e6, "um"),
        ("final_depth_error", 1e6, "um"),
        ("real_time_factor", 1.0, "x (simulated / wall time)"),
        ("controller_p99", 1e6, "us (in the loop)"),
    ):
        print(f"   {key:<20} {m[key] * scale:10.3f} {unit:<28} {'met' if met.get(key) else 'MISSED'}")
    print(
        f"   peak thrust {m['peak_thrust']:.1f} N, simulated {m['duration']:.2f} s in {m['wall_time']:.2f} s"
    )
    physics_steps = round(m["duration"] / control.dt) * control.physics_substeps
    print(
        f"   closed loop / MuJoCo alone for its {physics_steps} physics steps: "
        f"{m['wall_time'] / (physics_steps * step_time):.1f}x (same run)"
    )
    line = run_task("line", params, control=control).metrics.as_dict()
    print(
        f"   line task: deviation {line['line_deviation'] * 1e6:.3f} um "
        f"({'met' if line['line_deviation'] <= TARGETS['line_deviation'] else 'MISSED'}), "
        f"real-time factor {line['real_time_factor']:.2f}"
    )

    print("\n3. the report's step tests (profile-position reference at the joint limits)")
    print(
        f"   {'joint':<12} {'step':>6} {'settling':>9} {'overshoot':>11} {'min time*':>10} "
        f"{'raw step overshoot':>19}  report"
    )
    for joint, small, large in (
        ("gantry_x", 0.1, 0.5),
        ("gantry_y", 0.1, 0.5),
        ("gantry_z", 0.1, 0.5),
        ("wrist_yaw", 0.08, 1.0),
        ("wrist_pitch", 0.08, 1.0),
    ):
        for step, label in ((small, "small"), (large, "large")):
            response = simulate_step(params, control, joint, step, duration=1.5)
            try:
                raw = simulate_step(params, control, joint, step, duration=1.0, profile=False)
                raw_text = f"{raw.overshoot / step * 100:17.1f} %"
            except Exception as error:  # the raw step may fault the drive (overspeed)
                raw_text = f"{'drive fault':>17}  " if "FAULT" in str(error) else "error"
            unit = "rad" if joint.startswith("wrist") else "m"
            print(
                f"   {joint:<12} {step:>4g} {unit:<3}{response.settling_time:7.3f} s "
                f"{response.overshoot / step * 1e6:7.2f} ppm "
                f"{minimum_time_current_limited(params, control, joint, step):8.3f} s {raw_text}  "
                f"{REPORT_SETTLING[label]}"
            )
    print("   * bang-bang time at the full current with no speed limit: the report's settling times are")
    print("     below it, so they ignore the drives' current limit; ours follow the joint limits' profile.")


if __name__ == "__main__":
    main()
