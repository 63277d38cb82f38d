"""Rigid-body dynamics of QUIROBOT: RNEA, CRBA, gravity, forward dynamics (report ch.5, done right).

Joint order JOINT_NAMES (d1, d2, d3, theta4, theta5); q in m and rad, efforts in N (prismatic)
and N*m (revolute). Every function takes one state, arrays of shape (5,), or a batch of N
states, arrays of shape (N, 5), and answers in the same form; a batch is evaluated in one
vectorized numpy pass (the sizing study searches thousands of poses that way).

* inverse dynamics: recursive Newton-Euler (outward velocities and accelerations of the bodies,
  inward forces and moments), in world-frame vectors; gravity enters as the base acceleration -g.
  With friction: tau += damping * qd + coulomb * sign(qd) (the report's tau includes + b*qd).
* mass matrix: composite rigid bodies (inertia of each subtree, projected on the joint axes).
* forward dynamics: qdd = H(q)^-1 (tau - RNEA(q, qd, 0)) (the report's Walker-Orin method 3).

`Dynamics(params, model="physical" | "report")` selects the parameter file's bodies (default drill
tool at drill_feed = 0) or the report's own model (see quirobot_control.models.rigid_body). The
module-level functions take the parameters explicitly: no hidden file reading.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from quirobot_control.models.rigid_body import RigidBodyModel, build_model
from quirobot_description.parameters import JOINT_NAMES, RobotParameters
from quirobot_kinematics import KinematicModel, forward_kinematics


class DynamicsInputError(ValueError):
    """A joint-space input has the wrong shape or holds NaN/inf (named in the message)."""


def _rotation_about(axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations by `angles` (N,) rad about the unit `axis` (3,) (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    s = np.sin(angles)[:, None, None]
    c = np.cos(angles)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (N, 3) arrays (np.cross is several times slower on small N)."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _matvec(matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(N, 3, 3) @ (N, 3) -> (N, 3)."""
    return np.einsum("nij,nj->ni", matrices, vectors)


class Dynamics:
    """Rigid-body dynamics of one model; methods accept (5,) or (N, 5) arrays."""

    def __init__(self, source: RobotParameters | RigidBodyModel, model: str = "physical") -> None:
        """`source`: the robot parameters (the named `model` is built from them) or a built model."""
        self.model = source if isinstance(source, RigidBodyModel) else build_model(source, model)
        bodies = self.model.bodies
        self.dof = len(bodies)
        self._revolute = [b.joint_type == "revolute" for b in bodies]
        self._masses = np.array([b.mass for b in bodies])

    # --- input handling -----------------------------------------------------------------------
    def _batch(
        self, name: str, value: np.ndarray, reference_shape: tuple[int, ...] | None = None
    ) -> np.ndarray:
        array = np.asarray(value, dtype=float)
        if array.ndim not in (1, 2) or array.shape[-1] != self.dof:
            raise DynamicsInputError(
                f"{name} must have shape ({self.dof},) or (N, {self.dof}), got {array.shape}"
            )
        if reference_shape is not None and array.shape != reference_shape:
            raise DynamicsInputError(f"{name} has shape {array.shape}, expected {reference_shape} like q")
        if not np.all(np.isfinite(array)):
            raise DynamicsInputError(f"{name} holds NaN or inf: {array!r}")
        return np.atleast_2d(array)

    @staticmethod
    def _unbatch(result: np.ndarray, single: bool) -> np.ndarray:
        return result[0] if single else result

    # --- kinematics ---------------------------------------------------------------------------
    def _frames(self, q: np.ndarray):
        """World joint origins o (N, n, 3), axes z (N, n, 3), COMs c (N, n, 3), inertias (N, n, 3, 3)."""
        n_states = q.shape[0]
        rotation = np.broadcast_to(np.eye(3), (n_states, 3, 3))
        position = np.zeros((n_states, 3))
        origins, axes, coms, inertias = [], [], [], []
        for i, body in enumerate(self.model.bodies):
            joint_rotation = rotation @ body.rotation
            position = position + rotation @ body.origin
            axis = joint_rotation @ body.axis
            if self._revolute[i]:
                rotation = joint_rotation @ _rotation_about(body.axis, q[:, i])
            else:
                rotation = joint_rotation
                position = position + axis * q[:, i : i + 1]
            origins.append(position)
            axes.append(axis)
            coms.append(position + rotation @ body.com)
            inertias.append(rotation @ body.inertia @ np.swapaxes(rotation, -1, -2))
        return np.stack(origins, 1), np.stack(axes, 1), np.stack(coms, 1), np.stack(inertias, 1)

    def com_positions(self, q: np.ndarray) -> np.ndarray:
        """World positions (n, 3) or (N, n, 3) of the bodies' centres of mass, m."""
        qb = self._batch("q", q)
        return self._unbatch(self._frames(qb)[2], np.ndim(q) == 1)

    # --- inverse dynamics ---------------------------------------------------------------------
    def _rnea(self, frames, qd: np.ndarray, qdd: np.ndarray, gravity: bool) -> np.ndarray:
        """Recursive Newton-Euler on world-frame vectors; frames from `_frames`; (N, n) efforts."""
        origins, axes, coms, inertias = frames
        n_states = qd.shape[0]
        omega = np.zeros((n_states, 3))
        alpha = np.zeros((n_states, 3))
        accel = np.broadcast_to(-self.model.gravity if gravity else np.zeros(3), (n_states, 3))
        previous = np.zeros((n_states, 3))
        rotating = False  # omega and alpha stay zero until the first revolute joint (base is fixed)
        forces, moments = [], []
        for i, body in enumerate(self.model.bodies):
            z = axes[:, i]
            o = origins[:, i]
            d = coms[:, i] - o
            if rotating:  # acceleration of the parent-body point at o
                r = o - previous
                accel = accel + _cross(alpha, r) + _cross(omega, _cross(omega, r))
            if self._revolute[i]:
                if rotating:
                    alpha = alpha + z * qdd[:, i : i + 1] + _cross(omega, z * qd[:, i : i + 1])
                else:
                    alpha = z * qdd[:, i : i + 1]
                omega = omega + z * qd[:, i : i + 1]
                rotating = True
            elif rotating:
                accel = accel + 2.0 * _cross(omega, z * qd[:, i : i + 1]) + z * qdd[:, i : i + 1]
            else:
                accel = accel + z * qdd[:, i : i + 1]
            previous = o
            if rotating:
                accel_com = accel + _cross(alpha, d) + _cross(omega, _cross(omega, d))
                inertia = inertias[:, i]
                moments.append(_matvec(inertia, alpha) + _cross(omega, _matvec(inertia, omega)))
            else:
                accel_com = accel
                moments.append(None)
            forces.append(body.mass * accel_com)
        tau = np.empty((n_states, self.dof))
        force = np.zeros((n_states, 3))
        moment = np.zeros((n_states, 3))  # about the child's joint origin
        child_origin = None
        for i in reversed(range(self.dof)):
            o = origins[:, i]
            if child_origin is not None:
                moment = moment + _cross(child_origin - o, force)
            if moments[i] is not None:
                moment = moment + moments[i]
            moment = moment + _cross(coms[:, i] - o, forces[i])
            force = force + forces[i]
            child_origin = o
            tau[:, i] = np.einsum("nj,nj->n", axes[:, i], moment if self._revolute[i] else force)
        return tau

    def _friction(self, qd: np.ndarray) -> np.ndarray:
        return self.model.damping * qd + self.model.coulomb * np.sign(qd)

    def inverse_dynamics(self, q, qd, qdd, friction: bool = True) -> np.ndarray:
        """Joint efforts (5,) or (N, 5) for positions, velocities, accelerations (RNEA).

        Includes gravity, the model's armature * qdd, and with `friction` viscous + Coulomb terms.
        """
        qb = self._batch("q", q)
        qdb = self._batch("qd", qd, np.shape(q))
        qddb = self._batch("qdd", qdd, np.shape(q))
        tau = self._rnea(self._frames(qb), qdb, qddb, gravity=True) + self.model.armature * qddb
        if friction:
            tau = tau + self._friction(qdb)
        return self._unbatch(tau, np.ndim(q) == 1)

    def gravity_torques(self, q) -> np.ndarray:
        """Efforts (5,) or (N, 5) that hold the robot still at q against gravity."""
        qb = self._batch("q", q)
        zero = np.zeros_like(qb)
        return self._unbatch(self._rnea(self._frames(qb), zero, zero, gravity=True), np.ndim(q) == 1)

    def velocity_torques(self, q, qd) -> np.ndarray:
        """Coriolis and centrifugal efforts C(q, qd) qd, (5,) or (N, 5): no gravity, no friction."""
        qb = self._batch("q", q)
        qdb = self._batch("qd", qd, np.shape(q))
        return self._unbatch(
            self._rnea(self._frames(qb), qdb, np.zeros_like(qb), gravity=False), np.ndim(q) == 1
        )

    def bias_forces(self, q, qd, friction: bool = True) -> np.ndarray:
        """Coriolis, centrifugal, gravity (and friction) efforts: inverse dynamics at qdd = 0."""
        return self.inverse_dynamics(q, qd, np.zeros(np.shape(q)), friction=friction)

    # --- mass matrix --------------------------------------------------------------------------
    def _crba(self, frames) -> np.ndarray:
        """Composite rigid bodies: (N, n, n) joint-space inertia (without armature)."""
        origins, axes, coms, inertias = frames
        n_states, n = origins.shape[:2]
        eye = np.eye(3)
        # Composite of subtree i, accumulated inward: mass, first moment sum(m c), inertia about
        # the world origin.
        mass = 0.0
        first = np.zeros((n_states, 3))
        about_origin = np.zeros((n_states, 3, 3))
        H = np.zeros((n_states, n, n))
        for i in reversed(range(n)):
            c = coms[:, i]
            m = self._masses[i]
            mass = mass + m
            first = first + m * c
            about_origin = (
                about_origin
                + inertias[:, i]
                + m * (np.einsum("nj,nj->n", c, c)[:, None, None] * eye - c[:, :, None] * c[:, None, :])
            )
            o = origins[:, i]
            z = axes[:, i]
            lever = first - mass * o  # sum m (c - o_i)
            if self._revolute[i]:
                # Inertia of the subtree about o_i (parallel-axis shift), applied to z: the moment
                # for a unit qdd_i.
                so = np.einsum("nj,nj->n", first, o)
                about_o = (
                    about_origin
                    - (2.0 * so - mass * np.einsum("nj,nj->n", o, o))[:, None, None] * eye
                    + first[:, :, None] * o[:, None, :]
                    + o[:, :, None] * first[:, None, :]
                    - mass * o[:, :, None] * o[:, None, :]
                )
                force = _cross(z, lever)
                moment = _matvec(about_o, z)
            else:
                force = mass * z
                moment = _cross(lever, z)
            for j in range(i + 1):
                projected = moment + _cross(o - origins[:, j], force) if self._revolute[j] else force
                H[:, j, i] = H[:, i, j] = np.einsum("nj,nj->n", axes[:, j], projected)
        return H

    def mass_matrix(self, q) -> np.ndarray:
        """Joint-space inertia H(q), (5, 5) or (N, 5, 5), by composite rigid bodies (plus armature)."""
        qb = self._batch("q", q)
        H = self._crba(self._frames(qb)) + np.diag(self.model.armature)
        return self._unbatch(H, np.ndim(q) == 1)

    # --- forward dynamics ---------------------------------------------------------------------
    def forward_dynamics(self, q, qd, tau, friction: bool = True) -> np.ndarray:
        """Joint accelerations (5,) or (N, 5) under efforts tau: H^-1 (tau - bias)."""
        qb = self._batch("q", q)
        qdb = self._batch("qd", qd, np.shape(q))
        taub = self._batch("tau", tau, np.shape(q))
        frames = self._frames(qb)
        bias = self._rnea(frames, qdb, np.zeros_like(qb), gravity=True)
        if friction:
            bias = bias + self._friction(qdb)
        H = self._crba(frames) + np.diag(self.model.armature)
        qdd = np.linalg.solve(H, (taub - bias)[:, :, None])[:, :, 0]
        return self._unbatch(qdd, np.ndim(q) == 1)

    # --- energy -------------------------------------------------------------------------------
    def kinetic_energy(self, q, qd) -> np.ndarray | float:
        """0.5 qd^T H(q) qd in J (float, or (N,) for a batch)."""
        qdb = self._batch("qd", qd, np.shape(q))
        H = self.mass_matrix(q)
        H = H[None] if H.ndim == 2 else H
        energy = 0.5 * np.einsum("ni,nij,nj->n", qdb, H, qdb)
        return float(energy[0]) if np.ndim(q) == 1 else energy

    def potential_energy(self, q) -> np.ndarray | float:
        """Gravitational potential energy -sum m g.c in J (zero at the world origin)."""
        coms = self._frames(self._batch("q", q))[2]
        energy = -np.einsum("i,nij,j->n", self._masses, coms, self.model.gravity)
        return float(energy[0]) if np.ndim(q) == 1 else energy


def inverse_dynamics(q, qd, qdd, friction: bool = True, *, params: RobotParameters, model: str = "physical"):
    """RNEA efforts (5,) or (N, 5) of the named model built from `params`."""
    return Dynamics(params, model).inverse_dynamics(q, qd, qdd, friction=friction)


def mass_matrix(q, *, params: RobotParameters, model: str = "physical"):
    """CRBA joint-space inertia (5, 5) or (N, 5, 5)."""
    return Dynamics(params, model).mass_matrix(q)


def gravity_torques(q, *, params: RobotParameters, model: str = "physical"):
    """Holding efforts (5,) or (N, 5) against gravity."""
    return Dynamics(params, model).gravity_torques(q)


def forward_dynamics(q, qd, tau, friction: bool = True, *, params: RobotParameters, model: str = "physical"):
    """Joint accelerations (5,) or (N, 5) under efforts tau."""
    return Dynamics(params, model).forward_dynamics(q, qd, tau, friction=friction)


def gravity_model(params: RobotParameters) -> Callable[[np.ndarray], np.ndarray]:
    """q (6,) or (N, 6) -> efforts of the same shape (N, N*m) holding the robot against gravity:
    the arm's rigid-body model (JOINT_NAMES, drill tool) and the drill's feed axis (the last
    column) carrying the bit along the tool axis."""
    dynamics = Dynamics(params)
    kinematics = KinematicModel.from_parameters(params)
    bit_weight = params.drill.bit_mass * params.gravity
    n_arm = len(JOINT_NAMES)

    def gravity(q: np.ndarray) -> np.ndarray:
        arm = np.asarray(q, dtype=float)[..., :n_arm]
        approach_z = forward_kinematics(arm, kinematics)[..., 2, 2]
        return np.concatenate([dynamics.gravity_torques(arm), (bit_weight * approach_z)[..., None]], axis=-1)

    return gravity
