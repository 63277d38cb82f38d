"""Rigid-body inertia of simple solids, about their centre of mass (SI: kg, m, kg*m^2).

The xacro description computes the same formulas inline (xacro cannot import Python);
`quirobot check` compares the URDF's numbers against these functions.
"""

from __future__ import annotations

import numpy as np

_AXES = {"x": 0, "y": 1, "z": 2}


def box_inertia(mass: float, size: np.ndarray | list[float]) -> np.ndarray:
    """Inertia (3, 3) of a solid box of `mass` kg and edge lengths `size` (3,) m about its centre."""
    _check_positive("mass", mass)
    sx, sy, sz = (float(s) for s in size)
    for name, s in (("size x", sx), ("size y", sy), ("size z", sz)):
        _check_positive(name, s)
    return np.diag(
        [
            mass * (sy**2 + sz**2) / 12.0,
            mass * (sx**2 + sz**2) / 12.0,
            mass * (sx**2 + sy**2) / 12.0,
        ]
    )


def cylinder_inertia(mass: float, radius: float, length: float, axis: str = "z") -> np.ndarray:
    """Inertia (3, 3) of a solid cylinder about its centre; its axis along `axis` ('x', 'y' or 'z')."""
    _check_positive("mass", mass)
    _check_positive("radius", radius)
    _check_positive("length", length)
    if axis not in _AXES:
        raise ValueError(f"cylinder axis must be 'x', 'y' or 'z', got {axis!r}")
    transverse = mass * (3.0 * radius**2 + length**2) / 12.0
    moments = [transverse, transverse, transverse]
    moments[_AXES[axis]] = mass * radius**2 / 2.0
    return np.diag(moments)


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Inertia (3, 3) of a solid sphere of `mass` kg and `radius` m about its centre: 2/5 m r^2."""
    _check_positive("mass", mass)
    _check_positive("radius", radius)
    return np.eye(3) * (2.0 / 5.0) * mass * radius**2


def cylinder_mass(density: float, radius: float, length: float) -> float:
    """Mass in kg of a solid cylinder of `density` kg/m^3."""
    _check_positive("density", density)
    return float(density * np.pi * radius**2 * length)


def inertia_problems(inertia: np.ndarray, tolerance: float = 1e-12) -> list[str]:
    """Why `inertia` (3, 3) is not a physical rigid-body inertia; an empty list if it is.

    Physical means symmetric, positive-definite, and principal moments meeting the triangle
    inequality (I1 + I2 >= I3 for every permutation), as simulators require.
    """
    inertia = np.asarray(inertia, dtype=float)
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        return [f"inertia must be a finite 3x3 matrix, got {inertia!r}"]
    problems = []
    if not np.allclose(inertia, inertia.T, atol=tolerance):
        problems.append("inertia is not symmetric")
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if moments[0] <= 0.0:
        problems.append(
            f"inertia is not positive-definite (smallest principal moment {moments[0]:.6g} kg*m^2)"
        )
    elif moments[0] + moments[1] < moments[2] * (1.0 - 1e-9) - tolerance:
        problems.append(
            "principal moments break the triangle inequality "
            f"({moments[0]:.6g} + {moments[1]:.6g} < {moments[2]:.6g} kg*m^2)"
        )
    return problems


def _check_positive(name: str, value: float) -> None:
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
