"""Real rclpy: `spin_until_shutdown` ends quietly when the context is shut down under a spinning
executor, and raises what the executor raised while the context is still valid; `shutdown_executor`
waits for the callbacks a MultiThreadedExecutor is running, which rclpy's own shutdown does not.

The race itself (ros2/rclpy#398: the signal handler shuts the context down while the executor
builds its wait set, RCLError instead of ExternalShutdownException) depends on thread timing and
was seen once in a launch's log (task_node's inputs thread, at the end of
test_launch_bone_variants.py); here a real SingleThreadedExecutor on a real context raises rclpy's
RCLError from `spin`, once with the context shut down and once with it valid.
"""

from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")

from quirobot_control.nodes.rclpy_workarounds import shutdown_executor, spin_until_shutdown  # noqa: E402

#: s a callback runs in the shutdown tests: long against a shutdown that does not wait.
CALLBACK_SECONDS = 1.0


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


class SpinningWithACallback:
    """A real node on its own context and a MultiThreadedExecutor whose spin has returned (as
    task_node's does on SIGINT) with its timer's callback still running on one of the executor's
    threads, for CALLBACK_SECONDS s; `close()` it."""

    def __init__(self) -> None:
        import threading
        import time

        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.task import Future

        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("shutdown_probe", context=self.context)
        started, self.ended = Future(), threading.Event()

        def callback() -> None:
            self.timer.cancel()
            started.set_result(True)
            time.sleep(CALLBACK_SECONDS)
            self.ended.set()

        self.timer = self.node.create_timer(0.001, callback)
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self.executor.add_node(self.node)
        self.executor.spin_until_future_complete(started, timeout_sec=30.0)
        assert started.done(), "the timer's callback never started"

    def close(self) -> None:
        self.ended.wait(30.0)
        self.node.destroy_node()
        self.context.shutdown()


def test_rclpy_shutdown_does_not_wait_for_a_running_callback():
    """The upstream bug the workaround covers: when this fails, the rclpy in use waits by itself
    (ros2/rclpy#1309 reached it) and `shutdown_executor` can go."""
    probe = SpinningWithACallback()
    try:
        assert probe.executor.shutdown(timeout_sec=10 * CALLBACK_SECONDS)
        assert not probe.ended.is_set(), "rclpy's Executor.shutdown waited for the callback"
    finally:
        probe.close()


def test_shutdown_executor_waits_for_a_running_callback():
    probe = SpinningWithACallback()
    try:
        assert shutdown_executor(probe.executor, timeout=30.0)
        assert probe.ended.is_set(), "shutdown_executor returned with the callback still running"
    finally:
        probe.close()


def test_shutdown_executor_says_when_a_callback_outlasts_its_timeout():
    probe = SpinningWithACallback()
    try:
        assert not shutdown_executor(probe.executor, timeout=0.05 * CALLBACK_SECONDS)
        assert not probe.ended.is_set()
    finally:
        probe.close()


def test_shutdown_executor_does_not_wait_for_a_callback_parked_on_a_future():
    """A coroutine callback awaiting a future that nothing completes any more runs no code: the
    node may go. Waiting for it to be done held an idle task_node past launch's 5 s (exit -15)."""
    from rclpy.context import Context
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.task import Future

    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node("parked_probe", context=context)
    parked, never = Future(), Future()

    async def callback() -> None:
        timer.cancel()
        parked.set_result(True)
        await never

    timer = node.create_timer(0.001, callback)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(node)
    try:
        executor.spin_until_future_complete(parked, timeout_sec=30.0)
        assert parked.done(), "the timer's callback never started"
        # Waiting for the parked task would run out the timeout and return False (no wall-clock
        # bound here: a loaded machine may take any time to run what is not parked).
        assert shutdown_executor(executor, timeout=10 * CALLBACK_SECONDS), "waited for a parked callback"
        assert not never.done()
    finally:
        node.destroy_node()
        context.shutdown()
