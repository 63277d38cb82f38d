"""The safety layer's command limiter, one cycle of every joint: `limit_commands`.

The law (motion_monitor's module doc): from the previous safe command q_c and its step velocity
v_c, each joint's step velocity towards its request is bounded by the approach, the command
acceleration and the soft limits' velocity band; the safe position and velocity follow. It runs
at every 1 kHz cycle, six joints of a dozen comparisons and two square roots: interpreted, a
tenth of the hardware component's write (bench/sim_speed.py --parts). So it has a compiled twin
in the C extension `_limiter_kernel` (limiter_kernel.c): the same operations in the same order
on doubles, the same results bit for bit (test_command_limiter.py). Where it was not built (no
C compiler or Python headers) the Python below runs. `COMPILED` says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: A joint's limiter constants: soft lower, soft upper (m or rad), v_max (m/s or rad/s),
#: k_position (1/s), a_brake and a_cmd (m/s^2 or rad/s^2).
JointScalars = tuple[float, float, float, float, float, float]


def limit_commands_in_python(
    scalars: Sequence[JointScalars],
    previous: Sequence[float],
    step_velocity: list[float],
    position: Sequence[float],
    velocity: Sequence[float],
    dt: float,
) -> tuple[list[float], list[float]]:
    """Safe (position, velocity) commands (n,) for the requests `position`, `velocity` (n,) over
    the control period `dt` s, from the previous safe positions (n,); `step_velocity` (n,), the
    previous steps' velocities, is updated in place. Where a request passes unclipped its own
    value is returned (the same object)."""
    safe_position = []
    safe_velocity = []
    # min(a, b) and max(a, b) written out as the builtins pick (the first argument unless the
    # second is strictly beyond it), without their calls: a dozen per joint and cycle.
    for j, (soft_lower, soft_upper, v_max, k_position, a_brake, a_cmd) in enumerate(scalars):
        q_c, v_c = previous[j], step_velocity[j]
        v_down = -k_position * (q_c - soft_lower)  # max(min(., v_max), -v_max)
        v_down = v_max if v_max < v_down else v_down
        v_down = -v_max if -v_max > v_down else v_down
        v_up = -k_position * (q_c - soft_upper)  # min(max(., -v_max), v_max)
        v_up = -v_max if -v_max > v_up else v_up
        v_up = v_max if v_max < v_up else v_up
        # Braking distance: the command can stop at the soft limit decelerating at a_brake.
        room = soft_upper - q_c
        brake = math.sqrt(2.0 * a_brake * (0.0 if room < 0.0 else room))
        v_up = brake if brake < v_up else v_up
        room = q_c - soft_lower
        brake = -math.sqrt(2.0 * a_brake * (0.0 if room < 0.0 else room))
        v_down = brake if brake > v_down else v_down
        # Beyond a soft limit the joint is led back, starting from its command's velocity at
        # a_cmd (a homed joint rests in the soft-stop band: a jump to k_position * excess
        # would be a following error).
        if v_down > 0.0:
            bound = (0.0 if v_c < 0.0 else v_c) + a_cmd * dt
            v_down = bound if bound < v_down else v_down
        if v_up < 0.0:
            bound = (0.0 if v_c > 0.0 else v_c) - a_cmd * dt
            v_up = bound if bound > v_up else v_up
        # Slack of 1e-9 of the limit for rounding in the planner's samples.
        slack = 1e-9 * v_max
        v_up += slack
        v_down -= slack
        requested = (position[j] - q_c) / dt
        approach = abs(velocity[j]) + math.sqrt(2.0 * a_cmd * abs(position[j] - q_c)) + slack
        step = -approach if -approach > requested else requested  # min(max(., -approach), approach)
        step = approach if approach < step else step
        low, high = v_c - a_cmd * dt, v_c + a_cmd * dt
        step = low if low > step else step
        step = high if high < step else step
        step = v_down if v_down > step else step
        step = v_up if v_up < step else step
        safe_position.append(position[j] if step == requested else q_c + step * dt)
        step_velocity[j] = step
        # The velocity command follows the limited motion (its feed-forward matches the position).
        if step == requested:
            command = velocity[j]
            command = v_down if v_down > command else command
            safe_velocity.append(v_up if v_up < command else command)
        else:
            safe_velocity.append(step)
    return safe_position, safe_velocity


def within_limits_unknown(*_: object) -> None:
    """Where the C is not built: SafetyMonitor.check's own loop answers every cycle."""
    return None


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.safety import _limiter_kernel

    limit_commands = _limiter_kernel.limit_commands
    #: (scalars, following, start_excess, overspeed_ratio, command, measured, measured_velocity)
    #: -> True where SafetyMonitor.check passes (its comparisons, compiled), None: ask its loop.
    within_limits = _limiter_kernel.within_limits

    #: Whether `limit_commands` and `within_limits` are compiled (False: the Python above).
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    limit_commands = limit_commands_in_python
    within_limits = within_limits_unknown
    COMPILED = False
