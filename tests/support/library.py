"""Drive a program on the reference emulator by port values, with the timing semantics of
``bitgrid.ports`` written out again independently (a check on ``bitgrid.evaluate`` too)."""

from bitgrid.emulator import Emulator
from bitgrid.terms import Edges


def input_stream(portmap, rows, extra=0):
    """Per-subcycle :class:`Edges` for ``rows`` (dicts port -> int)."""
    total = (len(rows) - 1) * portmap.period + portmap.depth + extra
    total = max(total, 1)
    words = [[0, 0, 0, 0] for _ in range(total)]
    for port in portmap.inputs:
        for k, row in enumerate(rows):
            bits = port.encode(row[port.name])
            for bit, value in zip(port.bits, bits):
                if not value:
                    continue
                start = k * portmap.period + bit.skew
                stop = (k + 1) * portmap.period + bit.skew if k < len(rows) - 1 else total
                for t in range(start, min(stop, total)):
                    words[t][bit.side] |= 1 << bit.lane
    return [Edges(*w) for w in words]


def read_rows(portmap, outputs, count):
    """Row values of every output port from per-subcycle edge outputs."""
    result = []
    for k in range(count):
        row = {}
        for port in portmap.outputs:
            bits = [(outputs[k * portmap.period + portmap.latency + bit.skew - 1][bit.side]
                     >> bit.lane) & 1 for bit in port.bits]
            row[port.name] = port.decode(bits)
        result.append(row)
    return result


def run_rows(config, portmap, rows):
    """Output rows of ``config`` driven by ``rows`` on the emulator."""
    outputs = Emulator(config).run(input_stream(portmap, rows))
    return read_rows(portmap, outputs, len(rows))


def run_block(block, rows):
    """Output rows of ``block`` alone on a grid (``block.standalone()``)."""
    alone = block.standalone()
    return run_rows(alone.config, alone.portmap, rows)
