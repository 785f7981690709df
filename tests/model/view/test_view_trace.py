"""bitgrid.view.trace: a recorded run is every cell output after every subcycle."""

import numpy as np
import pytest

from bitgrid.config import Configuration
from bitgrid.terms import Edges
from bitgrid.vectors import compare_step
from bitgrid.view import MAX_TRACE_BITS, TraceTooLarge, record
from support.conformance import conformance_cases, load_conformance


@pytest.mark.parametrize("name", conformance_cases())
def test_edge_outputs_are_the_vector_files(name):
    case = load_conformance(name)
    config = case.load_bitstream().config
    trace = record(config, case.inputs)
    assert trace.subcycles == len(case.steps)
    assert not trace.outputs[0].any()                       # frame 0: reset
    for t, (expected, actual) in enumerate(zip(case.outputs, trace.edge_outputs)):
        assert not compare_step(t, expected, actual, case.width, case.height)
        frame = trace.outputs[t + 1]                        # the boundary cells give the same
        assert expected.n == sum(int(b) << i for i, b in enumerate(frame[0, 0, :]))
        assert expected.e == sum(int(b) << i for i, b in enumerate(frame[1, :, -1]))
        assert expected.s == sum(int(b) << i for i, b in enumerate(frame[2, -1, :]))
        assert expected.w == sum(int(b) << i for i, b in enumerate(frame[3, :, 0]))


def _cell_inputs(frame, edges, x, y, width, height):
    """Inputs n, e, s, w of cell (x, y) with the outputs ``frame`` (4, H, W) around it."""
    n = (edges.n >> x & 1) if y == 0 else frame[2, y - 1, x]
    e = (edges.e >> y & 1) if x == width - 1 else frame[3, y, x + 1]
    s = (edges.s >> x & 1) if y == height - 1 else frame[0, y + 1, x]
    w = (edges.w >> y & 1) if x == 0 else frame[1, y, x - 1]
    return int(n) | int(e) << 1 | int(s) << 2 | int(w) << 3


def test_every_frame_follows_from_the_last_cell_by_cell():
    """A per-cell model of SPEC sections 3 and 4, independent of the emulator's arrays."""
    width, height = 6, 4
    config = Configuration.random(width, height, seed=5)
    rng = np.random.default_rng(7)
    inputs = [Edges(*(int(rng.integers(0, 1 << n)) for n in (width, height, width, height)))
              for _ in range(12)]
    trace = record(config, inputs)
    for t, edges in enumerate(inputs):
        before, after = trace.outputs[t], trace.outputs[t + 1]
        for y in range(height):
            for x in range(width):
                if (x + y) % 2 != t % 2:                    # not this phase: holds
                    assert (after[:, y, x] == before[:, y, x]).all()
                    continue
                a = _cell_inputs(before, edges, x, y, width, height)
                for d in range(4):
                    assert after[d, y, x] == config[x, y][d] >> a & 1
        assert trace.value(t + 1, 0, 0, 1) == after[1, 0, 0]


def test_a_run_too_large_to_show_is_refused_before_it_runs():
    config = Configuration(256, 256)
    fit = MAX_TRACE_BITS // (4 * 256 * 256) - 1
    with pytest.raises(TraceTooLarge, match=f"at most {fit} subcycles fit"):
        record(config, [Edges()] * (fit + 1))
