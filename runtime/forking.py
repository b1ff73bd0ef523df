"""Starting a process that execs at once (Ray's daemons, a UCI engine) from a process that runs JAX."""
from __future__ import annotations

import contextlib
import warnings


@contextlib.contextmanager
def forks_quietly():
    """Silences JAX's "os.fork() was called ... deadlock" RuntimeWarning around starting processes
    that exec at once (Ray's daemons, a UCI engine): the child runs no JAX, so it cannot deadlock.
    Other warnings stay visible."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
        yield
