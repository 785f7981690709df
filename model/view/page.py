"""The HTML stepper: one self-contained page (no network: script, style and data inline) that
shows a program and steps through a run subcycle by subcycle.

The page draws the grid on a canvas (one block per cell when zoomed out, so a 256 x 256 grid is
65,536 pixels, not 65,536 DOM nodes; arrows and expressions when zoomed in), with play/pause,
step forward/back, a frame slider, the phase that ran (A: cells with ``x + y`` even, B: odd;
SPEC section 4), zoom (wheel, +/-) and pan (drag). Pointing at a cell shows its four LUTs,
their kinds and expressions, and its current outputs and inputs; a click keeps it. The edge
outputs of the frame are printed as hex words (``N_out 0x..``).

The page computes nothing about the grid: Python writes the LUTs, their kinds and expressions
(:mod:`.functions`), the cells' contents and colours (:mod:`.style`) and every output after
every subcycle of a run on the reference emulator (:mod:`.trace`) into a JSON block
(``<script type="application/json" id="bitgrid-data">``, format ``bitgrid-view-v1``):

* ``width``, ``height``; ``luts``: base64 of the LUTs as little-endian uint16 in the order
  ``luts[y, x, d]``; ``kinds``: base64 of the kind codes (uint8, same order); ``contents``:
  base64 of each cell's content index (uint8, ``[y, x]``, :data:`style.BACKGROUND_KEYS`);
  ``expressions``: ``{lut: expression}`` for every LUT value that occurs; ``summaries``:
  ``{"c0,c1,c2,c3": "pass: W->E, N->S (crossing)"}`` for the pass cells by their kind codes;
* ``frames``: frames of the run (subcycles + 1; 0 without a run); ``values``: base64 of the
  outputs packed little-endian bit by bit, bit ``((k * 4 + d) * height + y) * width + x`` is
  output ``d`` of cell ``(x, y)`` after ``k`` subcycles; ``edge_inputs``: base64 of the edge
  inputs packed the same way, per subcycle ``2 * (width + height)`` bits: the N lanes, E, S,
  then W lanes;
* ``ports``, ``period``, ``latency``: the port map (``bitgrid-ports-v1``) or none.

``window.bitgrid`` gives scripts (and the tests) the page's state: ``frame``, ``setFrame(k)``,
``forward()``, ``back()``, ``play()``, ``pause()``, ``value(x, y, side)`` (the output shown now),
``edgeOutputs()``, ``cellInfo(x, y)``, ``cellToClient(x, y)``.
"""

import base64
import html
import importlib.resources
import json

import numpy as np

from bitgrid.files import atomic_write
from bitgrid.terms import DIRECTIONS, side_lanes

from . import functions, style

__all__ = ["render_html", "page_data", "FORMAT"]

#: The ``format`` of the page's data block.
FORMAT = "bitgrid-view-v1"


#: The page's Content-Security-Policy: its own inline script and style, nothing fetched.
_POLICY = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


def _b64(array):
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def page_data(config, *, portmap=None, trace=None, title=None):
    """The page's data block as a dict (see the module docstring).

    :raises ValueError: for a port map or trace of another grid size.
    """
    width, height = config.width, config.height
    if portmap is not None:
        portmap.check_grid(width, height)
    kinds = functions.kinds(config)
    data = {
        "format": FORMAT, "title": title or f"{width} x {height} cells",
        "width": width, "height": height,
        "luts": _b64(config.luts.astype("<u2")),
        "kinds": _b64(kinds),
        "contents": _b64(style.contents(kinds)),
        "expressions": {int(lut): functions.expression(int(lut))
                        for lut in np.unique(config.luts)},
        "summaries": _summaries(kinds),
        "kind_names": {code: name for code, name in functions.KINDS.items()},
        "kind_codes": {"ZERO": functions.ZERO, "ONE": functions.ONE, "COPY": functions.COPY,
                       "NOT": functions.NOT, "LOGIC": functions.LOGIC},
        "style": {"background": {f"{k}/{p}": c for (k, p), c in style.BACKGROUND.items()},
                  "background_keys": list(style.BACKGROUND_KEYS), "arrow": style.ARROW,
                  "turn_cut": style.TURN_CUT,
                  "value": {str(v): c for v, c in style.VALUE.items()}, "port": style.PORT,
                  "grid_line": style.GRID_LINE, "updated": style.UPDATED,
                  "text": style.TEXT},
        "frames": 0, "ports": [], "period": None, "latency": None,
    }
    if portmap is not None:
        document = portmap.to_json()
        data.update(ports=document["ports"], period=document["period"],
                    latency=document["latency"])
    if trace is not None:
        if trace.outputs.shape[2:] != (height, width):
            raise ValueError(f"The run is of a {trace.outputs.shape[3]} x "
                             f"{trace.outputs.shape[2]} grid, the program is {width} x {height}")
        lanes = [side_lanes(d, width, height) for d in DIRECTIONS]
        edge_bits = np.zeros((trace.subcycles, sum(lanes)), dtype=np.uint8)
        for t, edges in enumerate(trace.inputs):
            at = 0
            for d, count in zip(DIRECTIONS, lanes):
                word = edges[d]
                edge_bits[t, at:at + count] = [(word >> i) & 1 for i in range(count)]
                at += count
        data.update(frames=trace.subcycles + 1,
                    values=_b64(np.packbits(trace.outputs.reshape(-1), bitorder="little")),
                    edge_inputs=_b64(np.packbits(edge_bits.reshape(-1), bitorder="little")))
    return data


def _summaries(kinds):
    """``{"c0,c1,c2,c3": summary}``: :func:`functions.cell_summary` of every pass cell, keyed
    by its four kind codes (the copies of a pass cell are its whole function)."""
    from bitgrid.cell import COPY_E, COPY_N, COPY_S, COPY_W
    copies = (COPY_N, COPY_E, COPY_S, COPY_W)
    result = {}
    for codes in np.unique(kinds.reshape(-1, 4), axis=0):
        if all(c == functions.ZERO or functions.COPY <= c < functions.NOT for c in codes) \
                and codes.any():
            tables = [0 if c == functions.ZERO else copies[c - functions.COPY] for c in codes]
            result[",".join(str(int(c)) for c in codes)] = functions.cell_summary(tables)
    return result


def _resource(name):
    return importlib.resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def render_html(config, path=None, *, portmap=None, trace=None, title=None):
    """The HTML stepper page of ``config`` (a :class:`~bitgrid.config.Configuration`), with
    the ports of ``portmap`` and the run ``trace`` (:func:`bitgrid.view.trace.record`), both
    optional.

    :param path: file to write (atomically), or ``None``.
    :returns: the page as text (UTF-8 when written).
    :raises ValueError: for a port map or trace of another grid size.
    """
    data = page_data(config, portmap=portmap, trace=trace, title=title)
    block = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    heading = html.escape(data["title"])
    # One swatch per content, its phase A and phase B shades side by side.
    legend = "".join(
        f'<span class="key" data-content="{key}"><span style="background:'
        f'{style.BACKGROUND[key, 0]}"></span><span style="background:{style.BACKGROUND[key, 1]}">'
        f'</span> {html.escape(colour)}: {html.escape(what)}</span><br>'
        for key, (colour, what) in style.CONTENT_LEGEND.items())
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{_POLICY}">
<title>{heading} · bitgrid view</title>
<style>
{_resource("page.css")}</style>
</head>
<body>
<header>
  <h1>{heading}</h1>
  <div class="controls">
    <button id="first" title="first frame (Home)">|&#x25c0;</button>
    <button id="back" title="step back (&#x2190;)">&#x25c0; back</button>
    <button id="play" title="play / pause (space)">&#x25b6; play</button>
    <button id="forward" title="step forward (&#x2192;)">forward &#x25b6;</button>
    <button id="last" title="last frame (End)">&#x25b6;|</button>
    <input id="frame-slider" type="range" min="0" max="0" value="0" aria-label="frame">
    <select id="speed" title="frames per second" aria-label="speed">
      <option value="1">1/s</option><option value="2">2/s</option>
      <option value="5" selected>5/s</option><option value="10">10/s</option>
      <option value="30">30/s</option></select>
  </div>
  <span id="frame-label"></span> <span id="phase-label" class="phase"></span>
  <div class="controls">
    <button id="zoom-out" title="zoom out (-)">&#x2212;</button>
    <button id="zoom-in" title="zoom in (+)">+</button>
    <button id="fit" title="fit the grid (f)">fit</button>
  </div>
</header>
<main>
  <div id="stage"><canvas id="grid"></canvas></div>
  <aside>
    <div id="cell"></div>
    <h2>edge outputs</h2>
    <div id="edge-outputs"></div>
    <h2>key</h2>
    <p class="legend">{legend}</p>
    <p class="hint">Chessboard: phase A cells (x + y even) lighter, phase B darker; subcycle t
    updates the cells of phase t % 2 (marked in their corner). Signals: red 1, dark grey 0.
    Triangles outside the grid: edge inputs of the subcycle that made the frame. Wheel or +/-
    zooms, drag pans, arrows step, space plays.</p>
  </aside>
</main>
<script type="application/json" id="bitgrid-data">{block}</script>
<script>
{_resource("page.js")}</script>
</body>
</html>
"""
    if path is not None:
        atomic_write(path, page)
    return page
