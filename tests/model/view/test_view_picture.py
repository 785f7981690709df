"""bitgrid.view.picture: SVG and PNG pictures of every conformance program, read back."""

import io
import re

import numpy as np
import pytest
from PIL import Image

from bitgrid import examples
from bitgrid.asm.minimise import expression as minimal_expression
from bitgrid.config import Configuration
from bitgrid.ports import PortMap
from bitgrid.terms import Edges
from bitgrid.view import picture, record, render_picture, style, view
from support.conformance import conformance_cases, load_conformance
from support.view import (SIDES, SVG, emulator_frames, svg_cell_texts, svg_ids, svg_texts,
                          svg_tree, truth_kind)


def _expected_arrows(config):
    """``arrow-X-Y-SRC-OUT[-not]`` of every copy output, from the truth tables."""
    arrows = set()
    for y in range(config.height):
        for x in range(config.width):
            for d, lut in enumerate(config[x, y]):
                kind, side = truth_kind(lut)
                if kind in ("copy", "not"):
                    arrows.add(f"arrow-{x}-{y}-{SIDES[side]}-{SIDES[d]}"
                               + ("-not" if kind == "not" else ""))
    return arrows


def _expected_lines(config):
    """The lines of each configured logic cell: ``E=<minimal expression>`` (no spaces), the
    LUT in hex when longer than the label limit, ``N=1`` for a constant 1."""
    cells = {}
    for y in range(config.height):
        for x in range(config.width):
            lines = []
            for d, lut in enumerate(config[x, y]):
                kind, _ = truth_kind(lut)
                if kind == "one":
                    lines.append(f"{SIDES[d]}=1")
                elif kind == "logic":
                    text = minimal_expression(lut).replace(" ", "")
                    lines.append(f"{SIDES[d]}={text if len(text) <= 12 else f'0x{lut:04x}'}")
            if lines:
                cells[x, y] = lines
    return cells


@pytest.mark.parametrize("name", conformance_cases())
def test_every_conformance_program_as_svg(name):
    case = load_conformance(name)
    config = case.load_bitstream().config
    trace = record(config, case.inputs)
    root = svg_tree(render_picture(config, trace=trace, fmt="svg", title=name))
    texts = svg_texts(root)
    assert name in texts
    for lane in range(max(config.width, config.height)):      # lane numbers on all sides
        assert texts.count(str(lane)) >= 2 * ((lane < config.width) + (lane < config.height))
    assert svg_ids(root, "arrow-") == _expected_arrows(config)
    lines = _expected_lines(config)
    logic_lines = sum(len(v) for v in lines.values())
    cells = svg_cell_texts(root)
    if logic_lines <= picture.MAX_EXPRESSIONS:
        assert cells == lines
    else:                                       # too many to write: a mark in each logic cell
        assert cells == {xy: ["\u0192"] for xy in lines}
        assert any("HTML page" in t for t in texts)
    frames = emulator_frames(config, case.inputs)
    last = frames[-1]
    expected = {f"out-{x}-{y}-{SIDES[d]}-{last[d, y, x]}"
                for y in range(config.height) for x in range(config.width)
                for d in range(4) if config[x, y][d] != 0}
    assert svg_ids(root, "out-") == expected
    assert any(f"after {len(case.steps)} of {len(case.steps)} subcycles" in t for t in texts)


@pytest.mark.parametrize("name", conformance_cases())
def test_every_conformance_program_as_png(name):
    case = load_conformance(name)
    config = case.load_bitstream().config
    data = render_picture(config, trace=record(config, case.inputs), fmt="png")
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    width, height = image.size
    if config.width > 2 * config.height:
        assert width > height
    if config.height > 2 * config.width:
        assert height > width
    assert min(width, height) >= 200


def test_every_frame_of_a_run_shows_its_values():
    config = examples.adder(2).config
    inputs = [Edges(w=i % 4, e=(i // 4) % 4) for i in range(8)]
    trace = record(config, inputs)
    frames = emulator_frames(config, inputs)
    for k in (0, 1, 5, 8):
        root = svg_tree(render_picture(config, trace=trace, frame=k, fmt="svg"))
        ones = {i for i in svg_ids(root, "out-") if i.endswith("-1")}
        expected = {f"out-{x}-{y}-{SIDES[d]}-1" for d in range(4) for y in range(2)
                    for x in range(2) if frames[k][d, y, x] and config[x, y][d]}
        assert ones == expected
    texts = svg_texts(svg_tree(render_picture(config, trace=trace, frame=0, fmt="svg")))
    assert any("reset: every output 0" in t for t in texts)


def _adder_ports(width, height, bits):
    return PortMap(width, height, latency=1, ports=[
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": i} for i in range(bits)]},
        {"name": "b", "direction": "in", "bits": [{"side": "E", "lane": i} for i in range(bits)]},
        {"name": "sum", "direction": "out",
         "bits": [{"side": "E", "lane": i} for i in range(bits)]},
        {"name": "carry", "direction": "out", "bits": [{"side": "S", "lane": bits - 1}]}])


def test_port_bits_are_labelled_at_their_lanes():
    config = examples.adder(8).config
    root = svg_tree(render_picture(config, portmap=_adder_ports(8, 8, 8), fmt="svg"))
    texts = svg_texts(root)
    for i in range(8):
        assert f"a[{i}]" in texts
        assert f"b[{i}] | sum[{i}]" in texts           # an input and an output on one lane
    assert "carry" in texts


def test_a_large_grid_is_drawn_one_block_per_cell_with_port_names():
    config = Configuration(40, 40)
    config.luts[:, :, 1] = 0xFF00                       # every cell passes W -> E
    ports = PortMap(40, 40, [{"name": "data", "direction": "in",
                              "bits": [{"side": "W", "lane": i} for i in range(40)]}])
    trace = record(config, [Edges(w=(1 << 40) - 1)] * 3)
    root = svg_tree(render_picture(config, portmap=ports, trace=trace, fmt="svg"))
    texts = svg_texts(root)
    assert texts.count("data") == 1 and "data[0]" not in texts
    assert "0" in texts and "32" in texts and "5" not in texts   # lanes numbered every 4
    assert not svg_ids(root, "arrow-") and not svg_ids(root, "out-")
    png = Image.open(io.BytesIO(render_picture(config, trace=trace, fmt="png")))
    assert png.size[0] >= 40 * 8                        # at least 8 pixels per cell


def test_the_same_program_gives_the_same_bytes():
    config = Configuration.random(4, 4, seed=3)
    assert render_picture(config, fmt="svg") == render_picture(config, fmt="svg")
    assert render_picture(config, fmt="png") == render_picture(config, fmt="png")


def test_files_and_refusals(tmp_path):
    config = Configuration.random(4, 2, seed=1)
    trace = record(config, [Edges()] * 4)
    path = tmp_path / "p.svg"
    data = view(config, path, trace=trace, frame=2)
    assert path.read_bytes() == data
    with pytest.raises(ValueError, match="outside the run"):
        render_picture(config, trace=trace, frame=5, fmt="svg")
    with pytest.raises(ValueError, match="only with a run"):
        render_picture(config, frame=1, fmt="svg")
    with pytest.raises(ValueError, match="ending in"):
        view(config, tmp_path / "p.jpg")
    with pytest.raises(ValueError, match="a frame is chosen only"):
        view(config, tmp_path / "p.html", trace=trace, frame=1)
    other = record(Configuration(2, 2), [Edges()])
    with pytest.raises(ValueError, match="2 x 2 grid"):
        render_picture(config, trace=other, fmt="png")
    with pytest.raises(ValueError, match="port map is for a 8 x 8 grid"):
        render_picture(config, portmap=_adder_ports(8, 8, 2), fmt="png")
    assert not (tmp_path / "p.jpg").exists()


def test_colours_are_those_of_the_style():
    """The chessboard: unconfigured cells are white in phase A, grey in phase B."""
    config = Configuration(4, 4)
    png = Image.open(io.BytesIO(render_picture(config, fmt="png"))).convert("RGB")
    pixels = np.asarray(png).reshape(-1, 3).astype(np.uint32)
    present = set(np.unique(pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2]).tolist())
    for p in (0, 1):
        assert int(style.BACKGROUND["blank", p][1:], 16) in present


def _rgb(hex_colour):
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])


def test_contents_are_told_apart_and_the_legend_names_them():
    """Unconfigured phase-B cells are light grey, so no other content may look grey or like
    them (a constant cell was once grey while the legend called grey 'constant 1'): every two
    backgrounds of different contents differ by at least 24 over the channels, the configured
    ones are tinted, and the legend names each content by its hue."""
    keys = style.BACKGROUND_KEYS
    for a in keys:
        for b in keys:
            if a < b:
                for p in (0, 1):
                    for q in (0, 1):
                        diff = np.abs(_rgb(style.BACKGROUND[a, p]) - _rgb(style.BACKGROUND[b, q]))
                        assert diff.sum() >= 24, (a, p, b, q)
        if a != "blank":
            for p in (0, 1):
                rgb = _rgb(style.BACKGROUND[a, p])
                assert rgb.max() - rgb.min() >= 12, (a, p)
    config = Configuration(4, 2)
    config[0, 0] = (0xFFFF, 0, 0, 0)                 # a constant cell in phase A
    config[1, 0] = (0, 0xFFFF, 0, 0)                 # and one in phase B
    root = svg_tree(render_picture(config, fmt="svg"))
    texts = svg_texts(root)
    start = [i for i, t in enumerate(texts) if t.startswith("phase A")]
    assert len(start) == 1
    legend = " ".join(texts[start[0]:])                 # the legend's lines, wrapped
    assert "white / light grey: unconfigured" in legend
    assert "lilac: constant 1 outputs" in legend and "grey: constant" not in legend
    png = Image.open(io.BytesIO(render_picture(config, fmt="png"))).convert("RGB")
    pixels = np.asarray(png).reshape(-1, 3).astype(np.uint32)
    present = set(np.unique(pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2]).tolist())
    for key in ("blank", "const"):
        for p in (0, 1):
            assert int(style.BACKGROUND[key, p][1:], 16) in present, (key, p)


def _path_points(root, gid):
    """The points of the polyline with id ``gid`` in an SVG (its ``d`` attribute)."""
    for element in root.iter():
        if element.get("id") == gid:
            path = element if element.tag == f"{SVG}path" else next(element.iter(f"{SVG}path"))
            numbers = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
            return np.array(numbers).reshape(-1, 2)
    raise AssertionError(f"no element {gid}")


def test_two_turns_do_not_look_like_a_crossing():
    """A cell with the turns W->S and N->E, one with the crossing W->E and N->S, and a fan-out
    W->E,S: the crossing's arrows meet at the centre, the turns' arrows cut their corners
    (away from the centre), and a fan-out's copies all start at its input side."""
    from bitgrid.cell import COPY_N, COPY_W
    config = Configuration(4, 2)
    config[0, 0] = (0, COPY_N, COPY_W, 0)            # N -> E and W -> S: two turns
    config[1, 0] = (0, COPY_W, COPY_N, 0)            # W -> E and N -> S: a crossing
    config[2, 0] = (0, COPY_W, COPY_W, 0)            # W -> E and W -> S: a fan-out
    root = svg_tree(render_picture(config, fmt="svg"))
    paths = {gid: _path_points(root, gid) for gid in svg_ids(root, "arrow-")}
    assert set(paths) == {"arrow-0-0-N-E", "arrow-0-0-W-S", "arrow-1-0-W-E", "arrow-1-0-N-S",
                          "arrow-2-0-W-E", "arrow-2-0-W-S"}
    # In SVG points (y down), the cells' centres: the crossing's two arrows share a point.
    cross_e, cross_s = paths["arrow-1-0-W-E"], paths["arrow-1-0-N-S"]
    centre = (cross_e[1] + cross_s[1]) / 2
    assert np.abs(cross_e[1] - cross_s[1]).max() < 0.01
    size = cross_e[-1][0] - cross_e[0][0]                 # about one cell
    turn_e, turn_s = paths["arrow-0-0-N-E"], paths["arrow-0-0-W-S"]
    left = centre - (size, 0)                             # the centre of cell (0, 0)
    assert np.linalg.norm(turn_e[1] - turn_s[1]) > 0.3 * size
    assert turn_e[1][0] > left[0] and turn_e[1][1] < left[1]       # towards the NE corner
    assert turn_s[1][0] < left[0] and turn_s[1][1] > left[1]       # towards the SW corner
    fan_e, fan_s = paths["arrow-2-0-W-E"], paths["arrow-2-0-W-S"]
    assert np.abs(fan_e[0] - fan_s[0]).max() < 0.01                # both leave the W side


def _split_labels(lines):
    """``{side: text}`` from a cell's lines: a line ``X=...`` starts output X, a line indented
    by two spaces continues the one before."""
    outputs, last = {}, None
    for line in lines:
        if line.startswith("  "):
            outputs[last] += line[2:]
        else:
            last, _, text = line.partition("=")
            outputs[last] = text
    return outputs


def test_long_expressions_are_broken_over_lines():
    """The multiplier's carry, maj(n, e, w) & maj(n, s, w), is written out over two lines, not
    as its table; in random cells every line fits the cell (at most 14 characters, 4 lines) and
    each output reads as its minimal expression or, only where that cannot fit, its table."""
    config = Configuration(2, 2)
    config[0, 0] = (0, 0x956A, 0xEA80, 0)            # the multiplier's full adder
    cells = svg_cell_texts(svg_tree(render_picture(config, fmt="svg")))
    assert cells[0, 0] == ["E=n^w^(e&s)", "S=maj(n,e,w)&", "  maj(n,s,w)"]
    rng = np.random.default_rng(5)
    config = Configuration(8, 8)
    config.luts[:] = rng.integers(0, 1 << 16, size=(8, 8, 4), dtype=np.uint16)
    config.luts[rng.random((8, 8, 4)) < 0.5] = 0                 # one to four outputs a cell
    cells = svg_cell_texts(svg_tree(render_picture(config, fmt="svg")))
    wrapped = 0
    for (x, y), lines in cells.items():
        assert len(lines) <= 4 and all(len(line) <= 14 for line in lines), lines
        wrapped += any(line.startswith("  ") for line in lines)
        shown = _split_labels(lines)
        for d, lut in enumerate(config[x, y]):
            kind, _ = truth_kind(lut)
            if kind not in ("logic", "one"):
                assert SIDES[d] not in shown
                continue
            text = minimal_expression(lut).replace(" ", "") if kind == "logic" else "1"
            assert shown[SIDES[d]] in (text, f"0x{lut:04x}")
            if shown[SIDES[d]] != text:                  # a table only when it cannot fit
                assert len(text) > 12
    assert wrapped >= 3


@pytest.mark.parametrize("side", [64])
def test_port_ticks_of_a_large_grid_leave_the_lane_numbers_readable(side):
    """Drawn one block per cell, a port's lanes are ticks outside the grid: beyond the lane
    numbers, not over them (they once covered the W and E numbers)."""
    ports = PortMap(side, side, [{"name": "a", "direction": "in",
                                  "bits": [{"side": "W", "lane": i} for i in range(side)]}])
    svg = render_picture(Configuration(side, side), portmap=ports, fmt="svg").decode()
    ticks = [float(v) for path in re.findall(r'<path d="([^"]*)"[^>]*stroke: #1f5fbf', svg)
             for v in re.findall(r"[ML] (-?[\d.]+) ", path)]
    assert len(ticks) == 2 * side
    lane_lefts = [float(x) - len(text) * 0.62 * float(size)
                  for size, x, text in re.findall(
                      r'font-size: ([\d.]+)px[^"]*text-anchor: end; fill: #9aa4ad" x="([\d.]+)"'
                      r'[^>]*>(\d+)</text>', svg)]
    assert len(lane_lefts) >= 16                          # the W side's lane numbers
    assert max(ticks) < min(lane_lefts)


def test_text_over_arrows_has_a_box():
    """A cell with both a pass and logic outputs writes its expressions on a box of the cell's
    colour (over the arrow); a cell of logic alone needs none."""
    from bitgrid.cell import COPY_E
    config = Configuration(2, 2)
    config[1, 0] = (0, 0, 0x0C0C, COPY_E)              # W = e (an arrow), S = logic
    config[0, 1] = (0, 0x0C0C, 0, 0)                   # logic alone
    root = svg_tree(render_picture(config, fmt="svg"))
    groups = {g.get("id"): g for g in root.iter(f"{SVG}g")
              if (g.get("id") or "").startswith("cell-")}
    mixed = groups["cell-1-0"].findall(f".//{SVG}path")
    assert len(mixed) == 1
    assert style.BACKGROUND["logic", 1] in mixed[0].get("style")
    assert groups["cell-0-1"].findall(f".//{SVG}path") == []
