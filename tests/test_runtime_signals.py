"""runtime/signals.py: a SIGTERM or Ctrl-C whose KeyboardInterrupt is swallowed (raised inside a finaliser or a gc
callback, where Python only prints it) still stops a loop that calls raise_if_stop_requested."""
import os
import signal

import pytest

from runtime import signals


class _KilledInFinaliser:
    def __init__(self, signum: int = signal.SIGTERM):
        self.signum = signum

    def __del__(self):
        os.kill(os.getpid(), self.signum)
        for _ in range(10_000):  # bytecode boundaries: the handler runs here, its exception dropped
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_sigterm_swallowed_in_a_finaliser_still_stops_the_loop():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signals.stop_on_signals()
        signals.raise_if_stop_requested()  # nothing pending yet
        _KilledInFinaliser()  # collected at once: its SIGTERM's KeyboardInterrupt never reaches here
        with pytest.raises(KeyboardInterrupt):
            signals.raise_if_stop_requested()
        signals.raise_if_stop_requested()  # acted on once
        with pytest.raises(KeyboardInterrupt):  # a SIGTERM outside a finaliser still interrupts at once
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass
        with pytest.raises(KeyboardInterrupt):  # ... and is also pending for the loop's check
            signals.raise_if_stop_requested()
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_swallowed_in_a_finaliser_still_stops_the_loop():
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
        signals.stop_on_signals()
        _KilledInFinaliser(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            signals.raise_if_stop_requested()
        signals.raise_if_stop_requested()  # acted on once
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job: SIGINT stays ignored
        signals.stop_on_signals()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


def test_a_sigterm_inside_stops_deferred_waits_for_the_block_to_end():
    """A donated train step and the assignment of its result are one block: a SIGTERM between them
    would leave deleted arrays to checkpoint, so it is raised when the block ends, once."""
    previous = signal.getsignal(signal.SIGTERM)
    done = []
    try:
        signals.stop_on_signals()
        with pytest.raises(KeyboardInterrupt):
            with signals.stops_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10_000):  # bytecode boundaries: the handler has run by now
                    pass
                done.append("step")
                with signals.stops_deferred():  # nested: only the outermost block raises
                    done.append("inner")
                done.append("assigned")
        assert done == ["step", "inner", "assigned"]
        signals.raise_if_stop_requested()  # acted on once
        with signals.stops_deferred():  # no signal: the block ends quietly
            done.append("again")
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_thread_s_block_neither_defers_nor_takes_the_main_thread_s_stop():
    """A learner training in a thread (selfplay/learners.py) wraps its steps in stops_deferred: the
    SIGTERM the main thread gets while such a block runs stops the main thread at once, and the
    thread's block does not raise that stop in the thread (where nothing would catch it)."""
    import threading
    previous = signal.getsignal(signal.SIGTERM)
    inside, release, raised = threading.Event(), threading.Event(), []

    def learner():
        try:
            with signals.stops_deferred():
                inside.set()
                release.wait(10)
        except KeyboardInterrupt:
            raised.append("thread")

    try:
        signals.stop_on_signals()
        worker = threading.Thread(target=learner)
        worker.start()
        assert inside.wait(10)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # bytecode boundaries: the handler has run by now
                pass
        release.set()
        worker.join(10)
        assert raised == []
    finally:
        release.set()
        signal.signal(signal.SIGTERM, previous)
        signals._stop_requested = False  # the direct raise leaves the flag for the main loop's check


def test_a_caught_stop_is_not_raised_again_by_the_stop_s_own_deferred_block():
    """A run catches the signal's KeyboardInterrupt, then saves its checkpoint in a stops_deferred
    block: that block must not raise the same signal again when it ends (a resumed tic-tac-toe run
    stopped by SIGTERM exited -2 with its summary lost), while a second signal still stops it."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signals.stop_on_signals()
        with pytest.raises(KeyboardInterrupt):  # raised at once, the flag left for the loop's check
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass
        signals.stop_handled()
        with signals.stops_deferred():  # the stop's checkpoint
            pass
        with pytest.raises(KeyboardInterrupt):  # a second signal during it: raised when it ends
            with signals.stops_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(10_000):
                    pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        signals._stop_requested = False
