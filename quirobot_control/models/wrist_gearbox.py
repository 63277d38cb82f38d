"""A wrist joint's motor side through its gearbox over one physics step: `wrist_motor_substeps`.

Each wrist joint's motor turns its rotor inertia J through a gearbox: stiffness k over the
play's dead zone (half of it either side) plus structural damping while in contact
(`gear_torque`), against the motor's dry (Coulomb) and viscous friction. The load side holds
still over the physics step (MuJoCo steps it after); the motor side takes `substeps` explicit
steps of h / substeps (the gearbox mode, <= 130 Hz, at 16 kHz: explicit is stable). Dry friction
holds a motor at rest while the net torque is within it, and stops, never reverses, a moving one.

RealisticPlant.step_period runs it for both wrist joints at every physics step, four sub-steps
each: interpreted, a fifth of an accuracy sample's plant time (bench/sim_speed.py --parts). So it
has a compiled twin in the C extension `_gearbox_kernel` (gearbox_kernel.c): the same operations in the
same order on doubles, bit for bit the same results (test_wrist_gearbox.py). Where it was not built
(no C compiler or Python headers) this module's Python runs. `COMPILED` says which.
"""

from __future__ import annotations

import math


def gear_torque(stiffness: float, half_play: float, damping: float, twist: float, slip: float) -> float:
    """Torque (N*m) a wrist gearbox transmits: `stiffness` N*m/rad over the dead zone of +-`half_play`
    rad of the twist (motor less load angle, rad), plus `damping` N*m*s/rad times the slip (motor
    less load speed, rad/s) while in contact; zero inside the play."""
    if twist > half_play:
        windup = twist - half_play
    elif twist < -half_play:
        windup = twist + half_play
    else:
        return 0.0
    return stiffness * windup + damping * slip


def wrist_motor_substeps_in_python(
    constants: tuple[float, ...],
    substeps: int,
    effort: float,
    coulomb: float,
    load_angle: float,
    load_speed: float,
    angle: float,
    speed: float,
) -> tuple[float, float, float]:
    """The motor side over `substeps` steps of dt (the law in the module doc); returns its new
    (angle rad, speed rad/s) and the mean torque (N*m) the gearbox transmitted to the load.

    constants (6,): the rotor inertia J kg*m^2 at the joint, the sub-step dt s, the viscous
    friction N*m*s/rad, the gear stiffness N*m/rad, half the play rad, the gear damping
    N*m*s/rad. effort: the drive's torque at the joint N*m; coulomb: the dry friction N*m (the
    engaged brake's holding torque added); the load's angle and speed, held; the motor's.
    """
    J, dt, viscous, stiffness, half_play, damping = constants
    total = 0.0
    for _ in range(substeps):
        transmitted = gear_torque(stiffness, half_play, damping, angle - load_angle, speed - load_speed)
        total += transmitted
        net = effort - transmitted - viscous * speed
        if speed == 0.0 and abs(net) <= coulomb:
            new_speed = 0.0  # stuck: dry friction holds
        else:
            direction = math.copysign(1.0, speed) if speed != 0.0 else math.copysign(1.0, net)
            new_speed = speed + dt * (net - coulomb * direction) / J
            if speed != 0.0 and new_speed * speed < 0.0:
                new_speed = 0.0  # friction stops it, never reverses it
        speed = new_speed
        angle += dt * new_speed
    return angle, speed, total / substeps


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.models import _gearbox_kernel

    wrist_motor_substeps = _gearbox_kernel.wrist_motor_substeps

    #: Whether `wrist_motor_substeps` is the compiled twin (False: the Python above).
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    wrist_motor_substeps = wrist_motor_substeps_in_python
    COMPILED = False
