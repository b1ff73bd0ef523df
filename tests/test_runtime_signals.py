"""configs/runtime.py: a SIGTERM whose KeyboardInterrupt is swallowed (raised inside a finaliser or a gc
callback, where Python only prints it) still stops a loop that calls raise_if_stop_requested."""
import os
import signal

import pytest

from configs import runtime


class _KilledInFinaliser:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(10_000):  # bytecode boundaries: the handler runs here, its exception dropped
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_sigterm_swallowed_in_a_finaliser_still_stops_the_loop():
    previous = signal.getsignal(signal.SIGTERM)
    try:
        runtime.stop_on_sigterm()
        runtime.raise_if_stop_requested()  # nothing pending yet
        _KilledInFinaliser()  # collected at once: its SIGTERM's KeyboardInterrupt never reaches here
        with pytest.raises(KeyboardInterrupt):
            runtime.raise_if_stop_requested()
        runtime.raise_if_stop_requested()  # acted on once
        with pytest.raises(KeyboardInterrupt):  # a SIGTERM outside a finaliser still interrupts at once
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):
                pass
        with pytest.raises(KeyboardInterrupt):  # ... and is also pending for the loop's check
            runtime.raise_if_stop_requested()
    finally:
        signal.signal(signal.SIGTERM, previous)
