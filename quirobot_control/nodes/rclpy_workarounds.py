"""The rclpy workarounds of the nodes, in one place, each with the upstream issue it covers.

Each is a small function that a later rclpy may make unnecessary: when the issue it names is
fixed in the rclpy the stack runs on (ROS 2 Jazzy: rclpy 7.1), the function goes and its callers
use rclpy's own API. rclpy is imported only inside the functions.

- `race_free_action_client` (ros2/rclpy#1123): an ActionClient whose request bookkeeping and
  response handling share one lock.
- `take_clock_on(node, other)` (ros2/rclpy#792): the node's /clock subscription moved to another
  node (its own executor and thread); rclpy offers no public way to do it.
- `destroy_action_entities(server, clients)` (ros2/rclpy#524): action servers and clients
  destroyed before their node, not left to the garbage collector.
- `spin_until_shutdown(executor, context)` (ros2/rclpy#398, ros2/ros2cli#854): an executor spun
  on a thread of its own ends quietly when SIGINT shuts the context down under it.
- `shutdown_executor(executor, timeout)` (ros2/rclpy#893, fixed by ros2/rclpy#1309, not in 7.1.6): a
  MultiThreadedExecutor's shutdown that waits for the callbacks its threads are running.
- `sigint_without_keyboard_interrupt()` and `join_signal_thread()`: SIGINT ends a node through
  rclpy's own signal thread only, and that thread is finished before any executor is destroyed
  (rclpy's signal thread triggers every executor's guard condition from a list that destroying an
  executor frees: a segfault in that thread).
"""

from __future__ import annotations

import threading
import time


def race_free_action_client(node, action_type, name: str, group):
    """An rclpy ActionClient whose request bookkeeping and response handling share one lock.

    ros2/rclpy#1123 (fixed upstream after 7.1.6): under a multi-threaded executor a response taken
    by another thread before the request's sequence number was recorded is dropped and its future
    never completes (a goal accepted by the controller, its acceptance lost). The lock is the
    upstream fix."""
    from rclpy.action import ActionClient

    class RaceFreeActionClient(ActionClient):
        def __init__(self) -> None:
            super().__init__(node, action_type, name, callback_group=group)
            self._request_lock = threading.RLock()

        def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None):
            with self._request_lock:
                return super().send_goal_async(goal, feedback_callback, goal_uuid)

        def _cancel_goal_async(self, goal_handle):
            with self._request_lock:
                return super()._cancel_goal_async(goal_handle)

        def _get_result_async(self, goal_handle):
            with self._request_lock:
                return super()._get_result_async(goal_handle)

        async def execute(self, taken_data):
            with self._request_lock:
                return await super().execute(taken_data)

    return RaceFreeActionClient()


def take_clock_on(node, other):
    """`node`'s clock set from /clock taken by `other` (a node spun on a thread of its own); the
    TimeSource doing it (detach_node() it before destroying `other`).

    ros2/rclpy#792 (open: "Insulate /clock callback on specific thread"): a node's time source
    subscribes to /clock on the node itself when use_sim_time is set, and rclpy offers no public
    way to move that subscription; it is detached through the node's private `_time_source`."""
    from rclpy.time_source import TimeSource

    node._time_source.detach_node()
    time_source = TimeSource(node=other)
    time_source.ros_time_is_active = True
    time_source.attach_clock(node.get_clock())
    return time_source


def destroy_action_entities(server, clients) -> None:
    """Destroy an action server (None: none) and action clients before their node is.

    ros2/rclpy#524: rclpy's destroy_node leaves action servers and clients (waitables) to the
    garbage collector, which can run after the node's handle is gone (task_node exited -11 after
    SIGINT, twice in long CI runs)."""
    if server is not None:
        server.destroy()
    for client in clients:
        client.destroy()


def spin_until_shutdown(executor, context) -> None:
    """`executor.spin()` on a thread of its own, ending quietly once `context` is shut down.

    ros2/rclpy#398 (ros2/ros2cli#854, ros-controls/ros2_controllers#2431 for the same race
    elsewhere): rclpy's signal handler shuts the context down from another thread; an executor
    that is building its wait set at that moment raises RCLError ("failed to initialize wait set:
    the given context is not valid") instead of ExternalShutdownException, and the thread died
    with a traceback in the launch's log at every Ctrl-C that hit it. An error while the context
    is still valid is raised."""
    from rclpy.executors import ExternalShutdownException

    try:
        executor.spin()
    except ExternalShutdownException:
        pass
    except Exception:
        if context.ok():
            raise


def shutdown_executor(executor, timeout: float) -> bool:
    """Shut `executor` down once its spin has returned, and wait at most `timeout` s (wall) for the
    callbacks it handed to its threads to end; True if they did (its node may then be destroyed),
    False if one still runs (destroying its node under it crashed task_node on SIGINT in CI).

    ros2/rclpy#893 (fixed upstream by ros2/rclpy#1309, not in 7.1.6): Executor.shutdown(timeout_sec)
    returns True at once, the callbacks a MultiThreadedExecutor runs on its ThreadPoolExecutor
    still running (it sets its shutdown flag before the check that would wait: measured, 0.0 s
    with a 2 s callback running, test_rclpy_workarounds.py), and the pool is never shut down. The
    wait reads the executor's private `_futures` (the tasks it submitted to its pool) and shuts
    down its private `_executor` (that pool), as the upstream fix does. A task parked on a future
    (a coroutine callback awaiting what will never come now) runs no code and is not waited for:
    waiting for it to be done held one idle task_node past launch's 5 s (exit -15, a ROS-tier run).
    The pool's own shutdown then waits for what it still runs or has queued. A
    SingleThreadedExecutor runs its callbacks on the thread that spins it: join that thread
    instead."""
    executor.shutdown(timeout_sec=0.0)  # no callback is started from here on
    deadline = time.monotonic() + timeout
    submitted = list(getattr(executor, "_futures", ()))
    while any(task.executing() for task in submitted):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    pool = getattr(executor, "_executor", None)
    if pool is not None:
        pool.shutdown(wait=True)
    return True


def sigint_without_keyboard_interrupt() -> None:
    """SIGINT ends the node through rclpy's signal handling only: call before rclpy.init.

    rclpy's SIGINT handler chains to the one it finds (Python's, which raises KeyboardInterrupt
    in the main thread at whatever bytecode it is running: inside the executor's thread-pool
    locks, it left a worker blocked on a lock and the process hung at exit, 1 of 11 SIGINTs in
    the stress run of join_signal_thread). With a handler that does nothing, rclpy's own signal
    thread shuts the context down and the executor's spin returns at a point of its choosing
    (ExternalShutdownException, or the RCLError of ros2/rclpy#398: spin_until_shutdown)."""
    import signal

    signal.signal(signal.SIGINT, lambda signum, frame: None)


def join_signal_thread() -> None:
    """rclpy's signal thread finished and its handlers removed, before any executor is destroyed.

    On SIGINT, rclpy's deferred signal-handling thread (signal_handler.cpp) walks the global list
    of every executor's SIGINT guard condition, triggering each, and shuts the contexts down. The
    node, woken at once, destroyed its executors: each unregisters its guard condition (the list
    is reallocated and the old one freed) and finalizes it, while that thread may still be
    walking the list. Measured with a task_node-shaped process (a MultiThreadedExecutor, a second
    node on its own thread) and SIGINT at random moments beside 2 busy processes: 2 segfaults in
    60 (faulthandler: no Python frame in the crashing thread, as task_node's -11 in CI); 0 in 150
    with this call first (and sigint_without_keyboard_interrupt); bench/sigint_race.py repeats it.
    rclpy's uninstall_signal_handlers joins that thread; a later SIGINT then reaches Python's
    (no-op) handler and SIGTERM its default (the process ends, as launch's escalation intends)."""
    from rclpy.signals import uninstall_signal_handlers

    uninstall_signal_handlers()
