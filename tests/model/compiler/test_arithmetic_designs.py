"""The arithmetic designs of issue 37 (bitgrid.compiler.designs: muladd, mac, addc) compiled
small and run on the emulator by port names against models written here from the Verilog's
meaning: each the library block at period 2."""

import random

from bitgrid.compiler import compile, designs
from bitgrid.evaluate import evaluate


def _compiled(tmp_path, name, **params):
    design = designs.design(name, **params)
    return compile(designs.write(design, tmp_path), top=design.top)


def _run(result, rows):
    return evaluate(result.config, result.portmap, rows, target="fast")


def test_muladd(tmp_path):
    result = _compiled(tmp_path, "muladd", n=4)
    rng = random.Random(1)
    rows = [{"a": rng.randrange(16), "b": rng.randrange(16), "c": rng.randrange(256)}
            for _ in range(300)]
    assert result.report["blocks"] == ["multiplier(bits=4, addend=8)"]
    assert _run(result, rows) == [{"y": (r["a"] * r["b"] + r["c"]) % 256} for r in rows]


def test_mac(tmp_path):
    result = _compiled(tmp_path, "mac", n=3, acc=7)
    rng = random.Random(2)
    rows = [{"rst": int(k in (40, 41, 90)), "a": rng.randrange(8), "b": rng.randrange(8)}
            for k in range(150)]
    expected, q = [], 0
    for row in rows:
        expected.append({"q": q})
        q = 0 if row["rst"] else (q + row["a"] * row["b"]) % 128
    assert result.portmap.period == 2
    assert _run(result, rows) == expected


def test_addc(tmp_path):
    result = _compiled(tmp_path, "addc", n=8)
    rows = [{"a": a, "b": (a * 37 + 11) % 256} for a in range(256)]
    assert result.report["cells"]["total"] == 16
    assert _run(result, rows) == [{"s": (r["a"] + r["b"]) % 256, "cout": (r["a"] + r["b"]) >> 8}
                                  for r in rows]
