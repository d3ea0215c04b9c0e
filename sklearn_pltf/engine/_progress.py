"""Progress lines for long loops (``verbose >= 1``): what runs, how far it
is, and the time left at the pace so far."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "progress_or_none"]


class Progress:
    """Count the units of a loop of known length and report on them.

    Calling the object after each unit prints a line such as
    ``"Chib's clamped runs: 120/400 blocks, 35 s so far, about 82 s left"``
    when ``interval`` seconds have passed since the last line, and always
    after the last unit. The time left is the mean time per unit so far
    times the units to go.

    Parameters
    ----------
    label : str
        What runs, e.g. ``"Chib's clamped runs"``.
    total : int
        Units in the loop.
    unit : str, default="steps"
        What one unit is, in the plural.
    interval : float, default=10.0
        Fewest seconds between two lines.
    stream : file-like, default=None
        Where to write (``sys.stdout`` at the time of writing).
    clock : callable, default=time.perf_counter
        Seconds, for the elapsed time.
    """

    def __init__(self, label, total, *, unit="steps", interval=10.0, stream=None,
                 clock=time.perf_counter):
        self.label, self.total, self.unit = label, int(total), unit
        self.interval, self.stream, self.clock = interval, stream, clock
        self.done = 0
        self._start = self._last = clock()

    def __call__(self, units=1):
        """Count ``units`` more finished, and report if it is time to."""
        self.done += units
        now = self.clock()
        if self.done >= self.total or now - self._last >= self.interval:
            self._last = now
            print(self.line(now), file=self.stream or sys.stdout, flush=True)

    def line(self, now):
        """The progress line at time ``now`` (a reading of ``clock``)."""
        elapsed = now - self._start
        text = f"{self.label}: {self.done}/{self.total} {self.unit}, {elapsed:.0f} s so far"
        if self.done < self.total:
            left = elapsed / max(self.done, 1) * (self.total - self.done)
            text += f", about {left:.0f} s left"
        return text


def progress_or_none(verbose, label, total, **kwargs):
    """A :class:`Progress` when ``verbose`` is at least 1, else None (the
    loops take ``progress=None`` to mean silence)."""
    return Progress(label, total, **kwargs) if verbose and verbose >= 1 else None
