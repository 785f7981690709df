"""A recorded run: every cell output of a grid after every subcycle, on the reference emulator.

The viewer shows a program's signals from a :class:`Trace`: frame ``k`` is the state after ``k``
subcycles (frame 0 is the reset state, every output 0), and subcycle ``k`` (0-based, phase
``k % 2``: A for even, B for odd; SPEC section 4) turns frame ``k`` into frame ``k + 1`` with the
edge inputs ``inputs[k]``.
"""

import typing

import numpy as np

from bitgrid.checks import check_int
from bitgrid.emulator import Emulator
from bitgrid.terms import Edges

__all__ = ["Trace", "record", "MAX_TRACE_BITS", "TraceTooLarge"]

#: The most output bits a trace holds (frames x 4 x width x height): 2**28, 32 MiB packed, 256
#: MiB as the viewer's unpacked array; for example 1,023 subcycles of a 256 x 256 grid.
MAX_TRACE_BITS = 1 << 28


class TraceTooLarge(ValueError):
    """A run with more output bits than :data:`MAX_TRACE_BITS`."""


class Trace(typing.NamedTuple):
    """Every cell output after every subcycle of one run.

    :attr outputs: array ``(frames, 4, height, width)`` of ``uint8`` (0 or 1):
        ``outputs[k, d, y, x]`` is output ``d`` (N=0, E=1, S=2, W=3) of cell ``(x, y)`` after
        ``k`` subcycles; ``frames = len(inputs) + 1``.
    :attr inputs: the edge inputs of each subcycle, a list of :class:`~bitgrid.terms.Edges`.
    :attr edge_outputs: the edge outputs after each subcycle (what ``Emulator.step`` returned),
        a list of :class:`~bitgrid.terms.Edges` as long as ``inputs``.
    """
    outputs: np.ndarray
    inputs: list
    edge_outputs: list

    @property
    def subcycles(self):
        """Number of subcycles run."""
        return len(self.inputs)

    def value(self, frame, x, y, side):
        """Output ``side`` (a :class:`~bitgrid.terms.Direction` or index) of cell ``(x, y)``
        after ``frame`` subcycles, 0 or 1."""
        return int(self.outputs[frame, int(side), y, x])


#: Subcycles between two calls of ``record``'s progress callback.
PROGRESS_EVERY = 1024


def record(config, inputs, *, progress=None):
    """Run ``config`` on the reference emulator from reset with the edge ``inputs`` (one
    per subcycle; anything :meth:`Edges.coerce` accepts) and record every output.

    :param progress: ``progress(done, total)`` in subcycles, every :data:`PROGRESS_EVERY`
        subcycles and once at the end (the CLI's progress bar).

    :returns: a :class:`Trace`.
    :raises TraceTooLarge: if the run has more than :data:`MAX_TRACE_BITS` output bits (the
        message says how many subcycles fit).
    :raises ValueError: for an edge word with bits beyond its lanes.
    """
    inputs = [Edges.coerce(edges) for edges in inputs]
    check_int(len(inputs), "Subcycles", minimum=0)
    bits_per_frame = 4 * config.width * config.height
    if (len(inputs) + 1) * bits_per_frame > MAX_TRACE_BITS:
        fit = MAX_TRACE_BITS // bits_per_frame - 1
        raise TraceTooLarge(f"a run of {len(inputs)} subcycles of a {config.width} x "
                            f"{config.height} grid is too long to show; at most {fit} "
                            f"subcycles fit (give --steps {fit} or fewer)")
    emulator = Emulator(config)
    outputs = np.zeros((len(inputs) + 1, 4, config.height, config.width), dtype=np.uint8)
    edge_outputs = []
    for k, edges in enumerate(inputs):
        edge_outputs.append(emulator.step(edges))
        outputs[k + 1] = emulator.outputs
        if progress is not None and (k + 1) % PROGRESS_EVERY == 0:
            progress(k + 1, len(inputs))
    if progress is not None:
        progress(len(inputs), len(inputs))
    return Trace(outputs, inputs, edge_outputs)
