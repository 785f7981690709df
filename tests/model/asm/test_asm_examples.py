"""The example programs of docs/asm.md assemble and compute what they say, on every operand
pair (the emulator through bitgrid.evaluate)."""

import os

from support.conformance import REPO

from bitgrid.asm import assemble, disassemble
from bitgrid.evaluate import evaluate

EXAMPLES = os.path.join(REPO, "docs", "examples")


def test_adder4_adds_every_pair():
    import pathlib
    config, portmap = assemble(pathlib.Path(EXAMPLES) / "adder4.bga")
    assert portmap.latency == 2 and portmap.period == 2
    rows = [{"a": a, "b": b} for a in range(16) for b in range(16)]
    assert evaluate(config, portmap, rows) == [{"sum": (r["a"] + r["b"]) % 16} for r in rows]
    # The disassembly is the program as written.
    text = disassemble(config, portmap)
    assert "cell 1,0..3: E = n ^ e ^ w, S = maj(n, e, w)" in text
    assert "in  a[0..3] W 0..3 skew 0..3" in text
