"""Plan a hole and drill it in the closed-loop simulation (no ROS).

Shows: a task file read into an `IncisionTask` (entry, direction, depth, feed rate, the bone),
`plan(task)`, the whole trajectory at the 1 kHz control rate with its named phases, and
`simulate(task)`, the same plan through inverse kinematics, one PID per joint, the brushless
drive models and MuJoCo physics with the bone's thrust on the drill tip, measured on the plant's
true drill tip.

To run in seconds the hole is the shipped incision's made short: 2 mm deep from 3 mm above the
entry, the robot parked on the drilling axis (the shipped 25.2 mm hole from its park pose:
`quirobot simulate --task incision`, about a minute). The plant is the ideal one (the
controller's own model); "realistic" adds backlash, compliance, delay, noise and bit bending
(docs/accuracy.md).

    python examples/02_plan_and_simulate_a_hole.py
"""

from dataclasses import replace

import numpy as np

from quirobot_control import plan, simulate
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.incision import targets_met
from quirobot_kinematics import ApproachTarget, ik

task = load_task("incision")  # config/tasks/incision.yaml, every number with its source
# Park on the drilling axis, the drill tip 3 mm above the entry (the feed at its park value).
above = task.entry - 0.003 * task.direction
feed = task.park[5]  # m, the drill feed's park position: the tip is `feed` past tool0 along the axis
park = np.append(ik(ApproachTarget(position=above, approach=task.direction), feed=feed), feed)
task = replace(task, park=park, approach_distance=0.003, depth=0.002, feed_rate=0.002, dwell=0.1)

trajectory = plan(task)  # the goal's checks first: a hole the robot must refuse raises, in one line
print(f"plan: {trajectory.duration:.2f} s, {trajectory.positions.shape[0]} samples of 6 joints")
for phase in trajectory.phases:
    print(f"  {phase.name:<9} {phase.start_time:5.2f} s .. {phase.end_time:5.2f} s")

result = simulate(task, plant="ideal")
hole = result.metrics.incision  # lengths in m, thrust in N
print(f"entry-point error   {hole.entry_error * 1e6:6.2f} um")
print(f"lateral deviation   {hole.lateral_deviation * 1e6:6.2f} um (during the feed)")
print(f"deepest point       {hole.max_depth * 1e3:6.3f} mm (planned {task.depth * 1e3:.3f} mm)")
print(f"peak bone thrust    {hole.peak_thrust:6.2f} N")
# The drilling monitor's verdict: None when the feed reached its depth without a stop.
print(f"drilling stop: {hole.drilling_stop}")
met = targets_met(result.metrics)
print(
    "precision targets met:",
    {k: v for k, v in met.items() if k not in ("controller_p99", "real_time_factor")},
)
