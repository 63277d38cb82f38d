"""The drive's sampled PI current loop over one physics step: `current_loop_samples`.

The loop samples every `period` s (motor.CurrentLoop.update, inlined: PI on the current error
with the back-EMF fed forward, the voltage clamped, anti-windup by tracking) and between samples
the current is the exact first-order solution of L di/dt = v - R*i - K_V*omega, clamped to the
drive's current limit. simulated_drive.advance_drive runs it for every drive at every physics step.

At 20 kHz that is five samples per 0.25 ms physics step for each of six drives, the largest part
of advance_drive's time interpreted (bench/sim_speed.py measures `quirobot simulate` with either:
bench/results/sim_speed.txt). So it has a compiled twin, the C extension
`_drive_kernel` (drive_kernel.c): the same operations in the same order on doubles,
bit for bit the same results (test_current_loop.py, test_drive_array.py). pip builds it where a
C compiler and Python's headers are there (setup.py: optional), colcon likewise (CMakeLists.txt);
elsewhere this module's own Python runs, slower, with the same results. `COMPILED` says which.
"""

from __future__ import annotations

import math


def current_loop_samples_in_python(
    constants: tuple[float, ...],
    reference: float,
    speed: float,
    dt: float,
    integral: float,
    saturated: bool,
    current: float,
    voltage: float,
    until_sample: float,
) -> tuple[float, bool, float, float, float]:
    """The current loop over `dt` s (the law in the module doc); returns the new (integral V,
    saturated, current A, voltage V, s until the next sample).

    constants (11,): the motor's R ohm, L H, K_V V*s/rad and current limit A, the loop's period s,
    the current's decay over one period (exp(-period*R/L)), kp V/A, ki*period V/A, the voltage
    limit V, and the resistance ohm and back-EMF constant V*s/rad it feeds forward with
    (SimulatedDrive._current_loop_constants). reference A and the motor's speed rad/s, held over
    the step; the loop's state before it: integral V, saturated, current A, voltage V (held
    until the next sample), s until the next sample.
    """
    R, L, K_V, limit, period, full_decay, kp, ki_period, voltage_limit, loop_resistance, back_emf = constants
    tolerance = 1e-9 * period
    remaining = dt
    while remaining > tolerance:
        if until_sample <= tolerance:
            if saturated:  # anti-windup by tracking (CurrentLoop.update)
                integral = loop_resistance * current
            error = reference - current
            unlimited = kp * error + integral + back_emf * speed
            voltage = (
                voltage_limit
                if unlimited > voltage_limit
                else -voltage_limit
                if unlimited < -voltage_limit
                else unlimited
            )
            saturated = voltage != unlimited
            if not saturated:
                integral += ki_period * error
            until_sample = period
        step = remaining if remaining < until_sample else until_sample
        decay = full_decay if step == period else math.exp(-step * R / L)
        steady = (voltage - K_V * speed) / R
        current = steady + (current - steady) * decay
        current = limit if current > limit else -limit if current < -limit else current
        remaining -= step
        until_sample -= step
    return integral, saturated, current, voltage, until_sample


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.drive_simulators import _drive_kernel

    current_loop_samples = _drive_kernel.current_loop_samples

    #: Whether `current_loop_samples` is the compiled twin (False: the Python above).
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    current_loop_samples = current_loop_samples_in_python
    COMPILED = False
