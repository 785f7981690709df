"""The stimulus of a run: the edge inputs of each subcycle (SPEC section 1), from a
``bitgrid-vectors-v1`` file, an edge-input stream file or a step count.

An edge-input stream is either a JSON list of ``{"N": "0x..", "E": ..., "S": ..., "W": ...}``
objects, one per subcycle (missing sides are 0), or a text file with one subcycle per line, the
words ``N E S W`` in hex separated by spaces or commas (``#`` starts a comment). N and S words
have ``width`` lanes, E and W words ``height`` lanes.

Every function raises :class:`StimulusError` (a :class:`ValueError`) with a message that names
the file and what is wrong, and lets :class:`OSError` of an unreadable file through.
"""

import json

from .files import read_bounded, unique_object
from .terms import SIDES, Edges, parse_hex, side_lanes
from .vectors import BadStreamCase, VectorFormatError, load_case

__all__ = ["StimulusError", "MAX_STEPS", "MAX_INPUT_BYTES", "parse_inputs", "load_inputs",
           "load_vectors", "stimulus", "record_vectors"]

#: The most subcycles a run takes (``--steps``, or the steps of an edge-input stream): a
#: million, minutes on the reference emulator and hours in an RTL simulator.
MAX_STEPS = 1_000_000

#: The largest edge-input stream file read, in bytes (256 MiB: far more than
#: :data:`MAX_STEPS` steps take in either form).
MAX_INPUT_BYTES = 256 << 20

_SIDE_WORDS = {s.lower() for s in SIDES} | {f"{s.lower()}_in" for s in SIDES}


class StimulusError(ValueError):
    """A stimulus that cannot be run: a malformed or empty file, a size mismatch, conflicting
    or missing options."""


def _word(value, count):
    """The value of one bus word of a JSON stream: a hex string, a non-negative integer or a
    list of lane bits (0 or 1, lane 0 first), checked to fit ``count`` lanes."""
    if isinstance(value, str):
        word = parse_hex(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value} is negative; a word is a lane bit pattern >= 0")
        word = value
    elif isinstance(value, list):
        if len(value) > count:
            raise ValueError(f"{len(value)} lane bits for its {count} lanes")
        for lane, bit in enumerate(value):
            if isinstance(bit, bool) or bit not in (0, 1):
                raise ValueError(f"lane {lane} is {json.dumps(bit)}; lane bits are 0 or 1")
        word = sum(bit << lane for lane, bit in enumerate(value))
    else:
        raise ValueError(f"{json.dumps(value)} is not a word: give a hex string like \"0x1f\", "
                         "an integer or a list of lane bits (0 or 1, lane 0 first)")
    if word >> count:
        raise ValueError(f"has bits beyond its {count} lanes")
    return word


def _json_steps(text, lanes, where):
    try:
        items = json.loads(text, object_pairs_hook=unique_object)
    except RecursionError:
        raise StimulusError(f"{where}: malformed edge-input stream: JSON nested too deeply "
                            "(a stream is a list of {\"N\": \"0x..\", ...} objects)") from None
    except ValueError as error:
        raise StimulusError(f"{where}: malformed edge-input stream: not valid JSON "
                            f"({error})") from None
    if not isinstance(items, list):
        hint = (" (for a vector file use --vectors)"
                if isinstance(items, dict) and "format" in items else "")
        raise StimulusError(f"{where}: malformed edge-input stream: a JSON edge-input stream is "
                            "a list of {\"N\": \"0x..\", ...} objects, one per subcycle" + hint)
    steps = []
    for t, item in enumerate(items):
        if not isinstance(item, dict):
            raise StimulusError(f"{where}: step {t}: expected an object with keys among N, E, "
                                f"S, W, got {json.dumps(item)[:60]}")
        words = {}
        for key, value in item.items():
            side = key.upper()
            if side not in SIDES or side in words:
                raise StimulusError(f"{where}: step {t}: unknown or repeated side {key!r} (the "
                                    f"sides are {', '.join(SIDES)})")
            try:
                words[side] = _word(value, lanes[side])
            except ValueError as error:
                raise StimulusError(f"{where}: step {t}: {side}: {error}") from None
        steps.append(Edges(*(words.get(s, 0) for s in SIDES)))
    return steps


def _text_steps(text, lanes, where):
    steps = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        at = f"{where}: step {len(steps)} (line {number})"
        words = line.replace(",", " ").split()
        if {w.lower() for w in words} <= _SIDE_WORDS:
            raise StimulusError(f"{at}: {line!r} looks like a header line; start it with '#' "
                                "to make it a comment")
        if len(words) != 4:
            raise StimulusError(f"{at}: expected 4 hex words N E S W, got {len(words)}")
        values = []
        for side, word in zip(SIDES, words):
            try:
                value = parse_hex(word)
                if value >> lanes[side]:
                    raise ValueError(f"has bits beyond its {lanes[side]} lanes")
            except ValueError as error:
                raise StimulusError(f"{at}: {side}: {error}") from None
            values.append(value)
        steps.append(Edges(*values))
        if len(steps) > MAX_STEPS:
            break
    return steps


def parse_inputs(text, width, height, *, where="<inputs>"):
    """The edge inputs of an edge-input stream (see the module docstring) for a ``width`` x
    ``height`` grid.

    A word is exactly hex digits, optionally after ``0x`` (no ``_``, sign or ``0b``/``0o``
    prefix); in the JSON form also a non-negative integer or a list of lane bits, each 0 or 1,
    lane 0 first (no floats, no ``true``/``false``). A word must fit its bus's lanes.

    :param text: the file's text.
    :param where: the file's name, for messages.
    :returns: a list of :class:`~bitgrid.terms.Edges`, one per subcycle (may be empty).
    :raises StimulusError: one line naming ``where``, the step (and, in the text form, the
        line) and the side, e.g. ``in.txt: step 3 (line 5): N: has bits beyond its 8 lanes``;
        also for more than :data:`MAX_STEPS` steps.
    """
    lanes = {side: side_lanes(side, width, height) for side in SIDES}
    text = text.removeprefix("\ufeff")         # a UTF-8 byte order mark, as editors write
    if text.lstrip().startswith(("[", "{")):
        steps = _json_steps(text, lanes, where)
    else:
        steps = _text_steps(text, lanes, where)
    if len(steps) > MAX_STEPS:
        raise StimulusError(f"{where}: more than {MAX_STEPS} steps, the most a run takes")
    return steps


def _bgbs_hint(data, path, what):
    """Bad input if ``data`` (a file's first bytes) is a BGBS BitGrid program."""
    from .bitstream import MAGIC
    if data[:len(MAGIC)] == MAGIC:
        raise StimulusError(f"{path} is not {what} (it looks like a BGBS BitGrid program: give "
                            "it as the PROGRAM argument)")


def load_inputs(path, width, height):
    """:func:`parse_inputs` of the file ``path`` (UTF-8 text, at most
    :data:`MAX_INPUT_BYTES`; a pipe or FIFO is read as it comes).

    :raises OSError: if the file cannot be read.
    :raises StimulusError: as :func:`parse_inputs`; a BGBS file, a file that is not UTF-8
        text, or a larger one.
    """
    data = read_bounded(path, MAX_INPUT_BYTES, "edge-input stream", StimulusError,
                        advice=f"one of {MAX_STEPS} steps is far smaller")
    _bgbs_hint(data, path, "an edge-input stream")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise StimulusError(f"{path}: not an edge-input stream: byte {error.start} is not "
                            "UTF-8 text") from None
    return parse_inputs(text, width, height, where=path)


def load_vectors(path, width, height):
    """The :class:`~bitgrid.vectors.VectorCase` of the vector file ``path``, checked to be for
    a ``width`` x ``height`` grid.

    :raises OSError: if the file cannot be read.
    :raises StimulusError: ``malformed vector file: ...``, for a bad-stream case, or
        ``size mismatch: ...``.
    """
    try:
        case = load_case(path)
    except VectorFormatError as error:
        raise StimulusError(f"malformed vector file: {error}") from None
    if isinstance(case, BadStreamCase):
        raise StimulusError(f"{path} is a bitgrid-badstream-v1 case, not a vector file")
    if (case.width, case.height) != (width, height):
        raise StimulusError(f"size mismatch: the vector file is for a {case.width} x "
                            f"{case.height} grid, the bitstream is {width} x {height}")
    return case


def stimulus(width, height, *, vectors=None, inputs=None, steps=None):
    """The inputs of a run of a ``width`` x ``height`` grid (``bitgrid emulate``, ``sim`` and
    ``run``).

    :param vectors: path of a vector file: its inputs, and its outputs to check (``steps``: only
        the first ``steps``).
    :param inputs: path of an edge-input stream; ``steps`` longer than the stream repeats its
        last input, shorter cuts it.
    :param steps: subcycles to run; alone, that many all-zero inputs.
    :returns: ``(case, stream)``: the :class:`~bitgrid.vectors.VectorCase` (``None`` without
        ``vectors``) and the list of input :class:`~bitgrid.terms.Edges`, one per subcycle (at
        least one).
    :raises StimulusError: both or neither of ``vectors``/``inputs`` (and no ``steps``),
        ``steps`` beyond 0 to :data:`MAX_STEPS`, an empty file, more ``steps`` than the vector
        file has, or a bad file.
    :raises OSError: if a file cannot be read.
    """
    if vectors and inputs:
        raise StimulusError("give either --vectors or --inputs, not both")
    if steps is not None and not 0 <= steps <= MAX_STEPS:
        raise StimulusError(f"--steps {steps}: give 0 to {MAX_STEPS} subcycles")
    if vectors:
        case = load_vectors(vectors, width, height)
        if not case.steps:
            raise StimulusError(f"{vectors}: the vector file has no steps")
        if steps is not None and steps > len(case.steps):
            raise StimulusError(f"--steps {steps}: the vector file has only {len(case.steps)} "
                                "steps")
        stream = case.inputs if steps is None else case.inputs[:steps]
        return case, stream
    stream = load_inputs(inputs, width, height) if inputs else []
    if inputs and not stream and not steps:
        raise StimulusError(f"{inputs}: the edge-input stream is empty")
    if steps is not None:
        if steps > len(stream):
            stream = stream + [stream[-1] if stream else Edges()] * (steps - len(stream))
        stream = stream[:steps]
    if not stream:
        raise StimulusError("nothing to run: give --vectors FILE, --inputs FILE or --steps N")
    return None, stream


def record_vectors(path, program, config, inputs, *, name=None, description=""):
    """Record a run as a ``bitgrid-vectors-v1`` file: the edge ``inputs`` and the outputs of the
    reference emulator after each (:func:`bitgrid.vectors.make_case`), naming the BitGrid
    program file ``program`` relative to the vector file's folder (absolute if it has none, as
    on another Windows drive). The file is written whole or not at all
    (:func:`bitgrid.files.atomic_write`); it is what ``--vectors`` of ``bitgrid emulate``,
    ``sim`` and ``run`` reads.

    :param config: the program's :class:`~bitgrid.config.Configuration`.
    :param inputs: list of :class:`~bitgrid.terms.Edges`, one per subcycle.
    :param name: the case's name (default: the vector file's name without ``.json``).
    :returns: the JSON object written.
    :raises OSError: if the file cannot be written.
    """
    import os

    from .files import atomic_write
    from .vectors import make_case
    folder = os.path.dirname(os.path.abspath(path))
    try:
        reference = os.path.relpath(os.path.abspath(program), folder)
    except ValueError:
        reference = os.path.abspath(program)
    if name is None:
        name = os.path.basename(os.fspath(path))
        name = name[:-5] if name.lower().endswith(".json") else name
    case = make_case(name, config, inputs, description=description, bitstream=reference)
    atomic_write(path, json.dumps(case, indent=1) + "\n")
    return case
