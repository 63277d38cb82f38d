"""Planning: jerk-limited joint trajectories (ruckig) and the surgical tasks built from them.

- trajectory: `JointTrajectory` (N samples at the control period, (N, 6): arm then drill feed),
  `plan_point_to_point`, `plan_line` (tool0 on a straight line; FK and IK passed in as
  callables), `plan_feed`;
- tasks: config/tasks/*.yaml (`load_task("incision")`) and their plans (`plan_incision`,
  `plan_line_task`), each checked against the task's virtual fixtures (`task_fixtures`);
- virtual_fixtures: `check_plan`, a plan whose tool enters a no-go zone or whose drill tip is too
  fast near the entry is refused naming the zone or limit, the phase and the time.

`quirobot_control.plan("incision")` is the one-call version.
"""

from quirobot_control.planning.tasks import IncisionTask, LineTask, load_task, plan_incision, plan_line_task
from quirobot_control.planning.trajectory import JointTrajectory, plan_feed, plan_line, plan_point_to_point

__all__ = [
    "IncisionTask",
    "JointTrajectory",
    "LineTask",
    "load_task",
    "plan_feed",
    "plan_incision",
    "plan_line",
    "plan_line_task",
    "plan_point_to_point",
]
