"""The ``--engine`` and ``--evaluators`` options of the commands that build a grid (``sim``,
``run --target sim``, ``verilog``, ``build``; SPEC section 7, docs/boards.md "Engines")."""

import functools

import click

from bitgrid.terms import ENGINES

from .errors import BadInput

__all__ = ["engine_options", "check_engine_options"]


def engine_options(command):
    """Add ``--engine direct|multiplexed`` and ``--evaluators N`` to a click command (its
    function gets ``engine`` and ``evaluators``)."""
    @click.option("--engine", type=click.Choice(ENGINES), default="direct",
                  show_default=True,
                  help="Grid engine: direct (one physical cell per cell, a subcycle per clock) "
                       "or multiplexed (cells in block RAM, a few evaluated per clock: far "
                       "larger grids, many clocks per subcycle). docs/boards.md, Engines.")
    @click.option("--evaluators", type=int, default=None, metavar="N",
                  help="With --engine multiplexed: cells computed per clock, 2 to WIDTH / 2 "
                       "(default 2).")
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        return command(*args, **kwargs)
    return wrapper


def check_engine_options(engine, evaluators, width):
    """Bad input (exit 2, one line) for ``--evaluators`` without the multiplexed engine, or out
    of range for a ``width``-cell wide grid; returns ``evaluators``."""
    if evaluators is None:
        return None
    if engine != "multiplexed":
        raise BadInput("--evaluators is an option of the multiplexed engine: add "
                       "--engine multiplexed")
    top = max(2, width // 2)
    if not 2 <= evaluators <= top:
        raise BadInput(f"--evaluators must be 2 to {top} for a grid {width} cells wide "
                       f"(a row has {width // 2} cells of one parity), not {evaluators}")
    return evaluators
