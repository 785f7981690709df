"""docs/library.md's generated part matches the blocks, and the pictures script draws."""

import importlib.util
import pathlib

from support.view import truth_kind

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _census(block):
    """(full adders, half adders, gates) of a block, from its truth tables: an output is logic
    if it is not constant and not a copy or an inverted copy of one input; a cell with two
    logic outputs that depend on all four inputs between them is a full adder, with two on
    fewer a half adder, with one a gate."""
    full = half = gates = 0
    for tables in block.cells.values():
        logic, inputs = 0, set()
        for lut in tables:
            kind, _ = truth_kind(lut)
            if kind == "logic":
                logic += 1
                inputs |= {k for k in range(4)
                           if any((lut >> a & 1) != (lut >> (a ^ 1 << k) & 1) for a in range(16))}
        if logic == 1:
            gates += 1
        elif logic >= 2:
            full, half = (full + 1, half) if len(inputs) == 4 else (full, half + 1)
    return full, half, gates


def test_library_doc_is_up_to_date():
    docs = _tool("library_docs")
    assert docs.main(["--check"]) == 0
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    from bitgrid.library import MACROS
    for name in MACROS:
        assert f"### {name}\n" in text and f"(library/{name}.svg)" in text
    # Lanes and skews read as they are: text_stream lane i enters cell (0, i), of parity i % 2.
    assert "| `in` | in | 8 | W0, W1 .. W7 (skew 0, 1, 0, 1, 0, 1, 0, 1) |" in text
    # Each multiplier row: the logic cells counted here from the truth tables alone.
    for n in range(2, 9):
        block = MACROS["multiplier"].build(bits=n)
        full, half, gates = _census(block)
        # The design: (n - 1)^2 full adders; half adders in the first column (n - 1) and the
        # tail (n (n - 1) / 2); AND gates in the first row (n) and XORs ending the tail (n - 1).
        assert (full, half, gates) == ((n - 1) ** 2, n - 1 + n * (n - 1) // 2, 2 * n - 1)
        assert f"| {n} | {block.width} x {block.height} | {block.cell_count} | " \
               f"{full + half + gates} | {full} | {half} | {gates} | {block.latency} |" in text


def test_pictures_script_draws_a_macro(tmp_path):
    pictures = _tool("library_pictures")
    assert pictures.main(["--out", str(tmp_path), "adder"]) == 0
    svg = (tmp_path / "adder.svg").read_text(encoding="utf-8")
    assert "<svg" in svg
    assert pictures.main(["--out", str(tmp_path), "nosuch"]) == 2
