"""Analyses on the models: servo sizing and the single-joint step response.

- sizing: `size_servos(params)`, the motor torque and speed each joint needs over the worst
  poses and directions (report ch.6), `plot_sizing`;
- step_response: `simulate_step(params, control, joint, step)`, one PID on one simulated drive
  and the joint's inertia (report ch.7's test bench).
"""

from quirobot_control.analysis.sizing import SizingResult, plot_sizing, size_servos
from quirobot_control.analysis.step_response import StepResponse, simulate_step

__all__ = ["SizingResult", "StepResponse", "plot_sizing", "simulate_step", "size_servos"]
