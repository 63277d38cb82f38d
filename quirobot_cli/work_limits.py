"""Bounds on the work a verb may be asked for, checked before the work starts.

A count or size beyond these would run for minutes or exhaust the memory (measured on this
2-core machine under load: `workspace --samples 1000000` 1.9 s and 123 MB, `size --poses 100000`
71 s, so 20000 poses is about 15 s; the defaults are 100000 samples and 4096 poses); asking for
more is a one-line error naming the option and its limit, not a hang.
The task's own duration bound lives with the planner (planning.tasks.MAX_TASK_DURATION).
"""

from __future__ import annotations

#: `quirobot workspace --samples`: Monte-Carlo samples of the reachable volume.
WORKSPACE_SAMPLES_MAX = 1_000_000
#: `quirobot size --poses`: poses of the worst-pose search.
SIZE_POSES_MAX = 20_000
#: `quirobot check --samples`: random configurations of the kinematics stage.
CHECK_SAMPLES_MAX = 100_000
#: `quirobot render --dpi`: resolution range of the PNG (600 dpi is already a print-quality image).
RENDER_DPI_MIN, RENDER_DPI_MAX = 10, 600


def check_count(value: float, option: str, highest: int, lowest: int = 1) -> int:
    """`value` as a whole number in [lowest, highest]; ValueError naming `option` and the bound."""
    if value != value or not float(value).is_integer() or not lowest <= value <= highest:
        raise ValueError(f"{option} must be a whole number from {lowest} to {highest}, got {value}")
    return int(value)
