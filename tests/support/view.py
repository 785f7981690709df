"""Helpers of the ``bitgrid view`` tests: reading an SVG picture back, the page's data block,
and independent models of what the viewer shows (a LUT's kind from its truth table, the cell
outputs of a run taken straight from the reference emulator)."""

import base64
import json
import re
import xml.etree.ElementTree as ET

import numpy as np

from bitgrid.emulator import Emulator

SVG = "{http://www.w3.org/2000/svg}"
SIDES = "NESW"


def svg_tree(data):
    """The parsed SVG (bytes) root; fails the test if it is not well-formed XML."""
    return ET.fromstring(data)


def svg_texts(root):
    """Every text of the picture, a list of strings."""
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def svg_ids(root, prefix):
    """The ids of the picture's elements that start with ``prefix``."""
    return {e.get("id") for e in root.iter() if (e.get("id") or "").startswith(prefix)}


def svg_cell_texts(root):
    """``{(x, y): [line, ...]}``: the lines written into each cell (its ``cell-X-Y`` group)."""
    result = {}
    for group in root.iter(f"{SVG}g"):
        match = re.fullmatch(r"cell-(\d+)-(\d+)", group.get("id") or "")
        if match:
            result[int(match[1]), int(match[2])] = ["".join(t.itertext())
                                                    for t in group.iter(f"{SVG}text")]
    return result


def truth_kind(lut):
    """``("zero"|"one"|"copy"|"not"|"logic", side)`` of a 16-bit LUT from its 16 bits: a copy
    of side ``k`` has bit ``a`` equal to bit ``k`` of ``a`` for every address."""
    bits = [(lut >> a) & 1 for a in range(16)]
    if not any(bits):
        return "zero", None
    if all(bits):
        return "one", None
    for k in range(4):
        if all(bits[a] == (a >> k) & 1 for a in range(16)):
            return "copy", k
        if all(bits[a] == 1 - ((a >> k) & 1) for a in range(16)):
            return "not", k
    return "logic", None


def emulator_frames(config, inputs):
    """Every cell output after every subcycle, straight from :class:`Emulator`: an array
    ``(len(inputs) + 1, 4, height, width)``, frame 0 the reset state."""
    emulator = Emulator(config)
    frames = [emulator.outputs.copy()]
    for edges in inputs:
        emulator.step(edges)
        frames.append(emulator.outputs.copy())
    return np.array(frames)


def page_block(page):
    """The JSON data block of an HTML page (a dict)."""
    match = re.search(r'<script type="application/json" id="bitgrid-data">(.*?)</script>', page,
                      re.S)
    assert match, "the page has no data block"
    return json.loads(match[1])


def unpack_bits(text, count):
    """``count`` bits (uint8 array) of a base64 block packed little-endian bit by bit."""
    raw = np.frombuffer(base64.b64decode(text), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:count]
