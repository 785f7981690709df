"""Progress on standard error for the commands that can run long (issue 39 item 5): one set of
options and three displays, shared by every command.

* :func:`progress_options` adds ``--progress/--no-progress`` and ``-q/--quiet`` to a command
  and passes it one ``show_progress`` bool: on with ``--progress``, off with ``--no-progress``
  or ``-q``, else on exactly when standard error is a terminal.
* :class:`Bar`: one tqdm bar, called as ``bar(done, total)``.
* :class:`Stages`: one bar per stage, called as ``stages(stage, done, total, detail=None)``
  (the protocol of :func:`bitgrid.compiler.compile_design` and :func:`bitgrid.bist.run`); a
  stage with no known total is a counter.
* :class:`StageTimer`: a line naming a step without a length of its own and its time so far.

Every display writes to standard error only, never to standard output (so JSON and CSV on
standard output stay clean), and removes itself when it ends (``leave=False``).
"""

import functools
import sys
import threading

import click

__all__ = ["progress_options", "Bar", "Stages", "StageTimer"]


def progress_options(function):
    """Decorate a click command with ``--progress/--no-progress`` and ``-q/--quiet``; the
    command gets ``show_progress`` (bool) and neither option by itself."""
    @click.option("--progress/--no-progress", "_progress", default=None,
                  help="Progress on standard error: the stage and how far along (default: "
                       "only when standard error is a terminal).")
    @click.option("-q", "--quiet", "_quiet", is_flag=True,
                  help="No progress display, even with --progress (errors and the result "
                       "are still printed).")
    @functools.wraps(function)
    def command(*args, _progress, _quiet, **kwargs):
        if _quiet:
            show = False
        elif _progress is None:
            show = sys.stderr.isatty()
        else:
            show = _progress
        return function(*args, show_progress=show, **kwargs)
    return command


def _tqdm(**kwargs):
    from tqdm import tqdm
    return tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, **kwargs)


class Bar:
    """A bar of ``done`` of ``total`` steps (a counter while ``total`` is None or 0), made at
    the first call, so that nothing shows for a run that ends before ``delay`` seconds.

    :param on: False makes every call a no-op (the ``show_progress`` of the command).
    :param desc: what is counted (``"subcycles"``); ``unit`` its unit.
    """

    def __init__(self, on=True, *, desc, unit="", delay=0):
        self._on, self._desc, self._unit, self._delay = on, desc, unit, delay
        self._bar = None

    def __call__(self, done, total):
        if not self._on:
            return
        if self._bar is None:
            self._bar = _tqdm(total=total or None, desc=self._desc, unit=self._unit,
                              delay=self._delay)
        if total and self._bar.total != total:
            self._bar.total = total
        self._bar.update(max(0, done - self._bar.n))

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Stages:
    """One bar per stage: ``stages(stage, done, total, detail=None)``; a new stage closes the
    last one's bar. ``names`` maps a stage to the words shown (``{"place": "placement"}``) and
    ``units`` a stage to its unit; ``detail`` (say Yosys' pass) is shown after the bar."""

    def __init__(self, on=True, *, names=None, units=None):
        self._on, self._names, self._units = on, dict(names or {}), dict(units or {})
        self._bar = self._stage = None

    def __call__(self, stage, done, total, detail=None):
        if not self._on:
            return
        if stage != self._stage:
            self.close()
            self._stage = stage
            self._bar = _tqdm(total=total or None, desc=self._names.get(stage, stage),
                              unit=self._units.get(stage, "step"))
        if total and self._bar.total != total:
            self._bar.total = total
        if detail is not None:
            self._bar.set_postfix_str(str(detail)[:60], refresh=False)
        self._bar.update(max(0, done - self._bar.n))

    def close(self):
        if self._bar is not None:
            self._bar.close()
        self._bar = self._stage = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class StageTimer:
    """A line that names what a long step without a known length is doing and for how long
    (``generating Verilog (Amaranth, Yosys) 0:12``), redrawn twice a second from a thread and
    removed when it ends.

    Use as a context manager: ``with StageTimer("generating Verilog", on=show_progress): ...``.
    """

    def __init__(self, text, *, on=True):
        self._text, self._on = text, on
        self._bar = self._thread = self._done = None

    def __enter__(self):
        if self._on:
            self._bar = _tqdm(total=None, desc=self._text, bar_format="{desc} {elapsed}")
            self._done = threading.Event()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def _tick(self):
        while not self._done.wait(0.5):
            self._bar.refresh()

    def __exit__(self, *exc):
        if self._bar is not None:
            self._done.set()
            self._thread.join()
            self._bar.close()
            self._bar = None
