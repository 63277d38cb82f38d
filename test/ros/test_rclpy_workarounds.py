"""Real rclpy: `spin_until_shutdown` ends quietly when the context is shut down under a spinning
executor, and raises what the executor raised while the context is still valid.

The race itself (ros2/rclpy#398: the signal handler shuts the context down while the executor
builds its wait set, RCLError instead of ExternalShutdownException) depends on thread timing and
was seen once in a launch's log (task_node's inputs thread, at the end of
test_launch_bone_variants.py); here a real SingleThreadedExecutor on a real context raises rclpy's
RCLError from `spin`, once with the context shut down and once with it valid.
"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from quirobot_control.nodes.rclpy_workarounds import spin_until_shutdown  # noqa: E402


def executor_failing_in_spin(context, shut_down_first: bool):
    """A real executor on `context` whose spin fails as in the race: the context shut down (when
    `shut_down_first`), then rclpy's own RCLError from building a wait set."""
    from rclpy._rclpy_pybind11 import RCLError
    from rclpy.executors import SingleThreadedExecutor

    class Racing(SingleThreadedExecutor):
        def spin(self) -> None:
            if shut_down_first:
                context.shutdown()
            raise RCLError("failed to initialize wait set: the given context is not valid")

    return Racing(context=context)


def test_an_executor_failing_as_its_context_shuts_down_ends_quietly():
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    spin_until_shutdown(executor_failing_in_spin(context, shut_down_first=True), context)
    assert not context.ok()


def test_an_executor_failing_on_a_valid_context_raises():
    from rclpy._rclpy_pybind11 import RCLError
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    try:
        with pytest.raises(RCLError, match="failed to initialize wait set"):
            spin_until_shutdown(executor_failing_in_spin(context, shut_down_first=False), context)
    finally:
        context.shutdown()
