"""SIGTERM and Ctrl-C stop a command as Ctrl-C would (checkpoint, engines closed, finished work kept).

    stop_on_signals()            # once, in the main thread: SIGTERM (and SIGINT) raise KeyboardInterrupt
    raise_if_stop_requested()    # in a loop: a signal whose KeyboardInterrupt a gc callback swallowed
    stop_handled()               # where the stop's KeyboardInterrupt is caught: later checks do not raise it again
    with stops_deferred(): ...   # a block a signal cannot cut in half (raised when it ends)
"""
from __future__ import annotations

import contextlib
import signal
import threading

# a SIGTERM or SIGINT arrived that raise_if_stop_requested has not acted on (a plain bool: a lock, as
# in threading.Event, could deadlock when the handler interrupts the main thread holding it)
_stop_requested = False
_deferring = 0  # depth of open stops_deferred() blocks: the handler records a signal instead of raising


def stop_on_signals() -> None:
    """SIGTERM (`kill`, a scheduler's preemption, `docker stop`) raises KeyboardInterrupt, so a command
    stops as on Ctrl-C (checkpoint, engines closed, finished work kept). A background job started from
    a script ignores SIGINT, so Ctrl-C alone cannot reach it. Ctrl-C (SIGINT, where Python's own
    handler is installed) goes through the same handler. Main thread only (Python's rule).
    A loop should also call `raise_if_stop_requested()`: a handler that runs inside a finaliser or a gc
    callback (JAX has one) has its KeyboardInterrupt printed and dropped, and the signal would be lost."""
    def interrupt(signum, frame):
        global _stop_requested
        _stop_requested = True
        if not _deferring:
            raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored
            signal.signal(signal.SIGINT, interrupt)


def raise_if_stop_requested() -> None:
    """KeyboardInterrupt if a SIGTERM or SIGINT arrived since the last call (whether or not its own
    KeyboardInterrupt got through); each signal is acted on once."""
    global _stop_requested
    if _stop_requested:
        _stop_requested = False
        raise KeyboardInterrupt


def stop_handled() -> None:
    """The caller caught the stop's KeyboardInterrupt and is stopping: the signal is acted on, so the
    next check (or the end of a stops_deferred block, such as the stop's own checkpoint) does not raise
    it a second time. A signal that comes after this call still does."""
    global _stop_requested
    _stop_requested = False


@contextlib.contextmanager
def stops_deferred():
    """A block that a SIGTERM or Ctrl-C (through `stop_on_signals`' handler) cannot cut in half: the
    signal is recorded and raised as KeyboardInterrupt when the block ends. For a train step that
    donates the old state's buffers and the assignment of the new state: an interrupt between the two
    would leave only deleted arrays to checkpoint. In any other thread (a learner training in a thread)
    it does nothing: no signal interrupts it there, and a stop recorded for the main thread stays its own."""
    global _deferring
    if threading.current_thread() is not threading.main_thread():
        yield  # signals interrupt the main thread alone: another thread's block needs no deferral
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring:
        raise_if_stop_requested()
