"""``bitgrid-vectors-v1`` and ``bitgrid-badstream-v1`` test-case files.

The format is defined in the shared conformance folder's README: a JSON object with the grid
size, the name of a BGBS file beside it, and a list of subcycles, each with the edge inputs to
apply and the edge outputs expected after it, as lower-case hex words.
"""

import json
import os
import typing

from .bitstream import load as load_bitstream
from .checks import check_int
from .files import parse_json, read_bounded
from .terms import SIDES, Edges, parse_hex, side_lanes

__all__ = ["VectorCase", "BadStreamCase", "VectorFormatError", "Mismatch", "load_case",
           "compare_step", "format_mismatches", "make_case", "case_document", "save_case",
           "SIDES"]


class VectorFormatError(ValueError):
    """A vector file that does not follow ``bitgrid-vectors-v1``."""


class Mismatch(typing.NamedTuple):
    """One differing output lane: at ``step``, side ``side`` (``"N"``..), lane ``lane``."""
    step: int
    side: str
    lane: int
    expected: int
    actual: int

    def __str__(self):
        return (f"step {self.step}: {self.side}_out lane {self.lane}: expected {self.expected}, "
                f"got {self.actual}")


class VectorCase(typing.NamedTuple):
    """A parsed ``bitgrid-vectors-v1`` case.

    :attr steps: list of ``(inputs, outputs)`` pairs of :class:`~bitgrid.emulator.Edges`.
    :attr bitstream_path: absolute path of the BGBS file it names.
    """
    name: str
    description: str
    width: int
    height: int
    bitstream_path: str
    steps: list

    @property
    def inputs(self):
        return [i for i, _ in self.steps]

    @property
    def outputs(self):
        return [o for _, o in self.steps]

    def load_bitstream(self):
        """Load the case's bitstream, checked against the case's grid size."""
        return load_bitstream(self.bitstream_path, width=self.width, height=self.height)


class BadStreamCase(typing.NamedTuple):
    """A parsed ``bitgrid-badstream-v1`` case: a bitstream that must be rejected."""
    name: str
    width: int
    height: int
    bitstream_path: str
    expect_error: str

    def load_bitstream(self):
        """Load the bitstream for the case's grid size; for a conforming reader this raises
        :class:`~bitgrid.bitstream.BitstreamError`."""
        return load_bitstream(self.bitstream_path, width=self.width, height=self.height)


#: The largest vector file read, in bytes (1 GiB: millions of steps of a large grid).
MAX_FILE_BYTES = 1 << 30


def _word(text, lanes, where):
    try:
        value = parse_hex(text, prefix=True)
    except ValueError as error:
        raise VectorFormatError(f"{where}: {error}") from None
    if value >> lanes:
        raise VectorFormatError(f"{where}: {text} has bits beyond its {lanes} lanes")
    return value


def _edges(obj, width, height, where):
    if not isinstance(obj, dict) or set(obj) != set(SIDES):
        raise VectorFormatError(f"{where}: expected an object with keys N, E, S, W, got {obj!r}")
    return Edges(*(_word(obj[s], side_lanes(s, width, height), f"{where}.{s}") for s in SIDES))


def load_case(path):
    """Load a ``bitgrid-vectors-v1`` or ``bitgrid-badstream-v1`` JSON file.

    :returns: :class:`VectorCase` or :class:`BadStreamCase`.
    :raises OSError: if the file cannot be read.
    :raises VectorFormatError: naming the file and the first malformed field; also for a BGBS
        program, a file that is not UTF-8 JSON, nested too deeply or larger than
        :data:`MAX_FILE_BYTES`.
    """
    data = read_bounded(path, MAX_FILE_BYTES, "vector file", VectorFormatError)
    obj = parse_json(data, path, "vector file", VectorFormatError)
    if not isinstance(obj, dict):
        raise VectorFormatError(f"{path}: top level must be a JSON object")
    if "format" not in obj:
        raise VectorFormatError(f"{path}: missing field 'format' (expected "
                                "'bitgrid-vectors-v1')")
    fmt = obj.get("format")
    for key in ("width", "height", "bitstream"):
        if key not in obj:
            raise VectorFormatError(f"{path}: missing field {key!r}")
    width, height = obj["width"], obj["height"]
    for key, value in (("width", width), ("height", height)):
        check_int(value, f"{path}: {key}", minimum=2, even=True, error=VectorFormatError)
    if not isinstance(obj["bitstream"], str):
        raise VectorFormatError(f"{path}: bitstream must be a file name")
    bitstream_path = os.path.join(os.path.dirname(os.path.abspath(path)), obj["bitstream"])
    name = obj.get("name", os.path.splitext(os.path.basename(path))[0])
    if fmt == "bitgrid-badstream-v1":
        if not isinstance(obj.get("expect_error"), str):
            raise VectorFormatError(f"{path}: a bitgrid-badstream-v1 case needs an "
                                    "'expect_error' string")
        return BadStreamCase(name, width, height, bitstream_path, obj["expect_error"])
    if fmt != "bitgrid-vectors-v1":
        raise VectorFormatError(f"{path}: format is {fmt!r}, expected 'bitgrid-vectors-v1'")
    steps = obj.get("steps")
    if not isinstance(steps, list):
        raise VectorFormatError(f"{path}: 'steps' must be a list")
    parsed = []
    for t, step in enumerate(steps):
        if not isinstance(step, dict) or "in" not in step or "out" not in step:
            raise VectorFormatError(f"{path}: steps[{t}] must have 'in' and 'out'")
        parsed.append((_edges(step["in"], width, height, f"{path}: steps[{t}].in"),
                       _edges(step["out"], width, height, f"{path}: steps[{t}].out")))
    return VectorCase(name, str(obj.get("description", "")), width, height, bitstream_path,
                      parsed)


def compare_step(step, expected, actual, width, height):
    """List the :class:`Mismatch` es between two :class:`Edges` of a ``width`` x ``height``
    grid at subcycle ``step`` (empty if they agree)."""
    result = []
    for side in SIDES:
        e, a = expected.side(side), actual.side(side)
        diff = e ^ a
        for lane in range(side_lanes(side, width, height)):
            if diff >> lane & 1:
                result.append(Mismatch(step, side, lane, e >> lane & 1, a >> lane & 1))
    return result


def format_mismatches(mismatches, limit=20):
    """A human-readable report of mismatches, at most ``limit`` lines plus a count."""
    lines = [str(m) for m in mismatches[:limit]]
    if len(mismatches) > limit:
        lines.append(f"... and {len(mismatches) - limit} more mismatching lanes")
    return "\n".join(lines)


def make_case(name, config, inputs, *, description="", bitstream=None, origin=None):
    """Build a ``bitgrid-vectors-v1`` JSON object by running ``config`` on the reference
    emulator with the edge ``inputs`` (a list of anything :meth:`Edges.coerce` accepts).

    :param bitstream: file name of the case's BGBS file (default ``name + ".bgbs"``).
    :returns: a ``dict`` ready for :func:`json.dump`.
    """
    from .emulator import Emulator
    emulator = Emulator(config)
    steps = []
    for value in inputs:
        edges = Edges.coerce(value)
        steps.append((edges, emulator.step(edges)))
    origin = origin or "bitgrid reference emulator (bitgrid.emulator.Emulator)"
    return case_document(name, config.width, config.height, steps, description=description,
                         bitstream=bitstream, origin=origin)


def case_document(name, width, height, steps, *, description="", bitstream=None, origin=""):
    """A ``bitgrid-vectors-v1`` JSON object (a ``dict``) of the ``(inputs, expected outputs)``
    :class:`~bitgrid.terms.Edges` pairs ``steps`` of a ``width`` x ``height`` grid, each word
    in lower-case hex of its side's lanes (``bitstream`` defaults to ``name + ".bgbs"``)."""
    return {
        "format": "bitgrid-vectors-v1",
        "name": name,
        "description": description,
        "origin": origin,
        "width": width,
        "height": height,
        "bitstream": bitstream or f"{name}.bgbs",
        "steps": [{"in": Edges.coerce(i).hex_words(width, height),
                   "out": Edges.coerce(o).hex_words(width, height)} for i, o in steps],
    }


def save_case(directory, name, config, inputs, *, description="", order=0):
    """Write ``name.bgbs`` and ``name.json`` (see :func:`make_case`) into ``directory``.

    :returns: the path of the JSON file.
    """
    from .bitstream import save as save_bitstream
    from .files import atomic_write
    os.makedirs(directory, exist_ok=True)
    save_bitstream(os.path.join(directory, f"{name}.bgbs"), config, order)
    case = make_case(name, config, inputs, description=description)
    path = os.path.join(directory, f"{name}.json")
    atomic_write(path, json.dumps(case, indent=1) + "\n")      # whole or not at all
    return path
