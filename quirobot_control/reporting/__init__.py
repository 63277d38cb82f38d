"""Reporting of a simulation: its MCAP log and its PNG summary.

- recording: `write_mcap(path, log, trajectory)`, ROS 2 messages readable by Foxglove and
  `ros2 bag play`;
- plots: `plot_result(result, path)`, the whole run on one time axis (matplotlib, Agg).
"""

from quirobot_control.reporting.plots import plot_result
from quirobot_control.reporting.recording import write_mcap

__all__ = ["plot_result", "write_mcap"]
