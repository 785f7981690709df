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

from .terms import SIDES, Edges
from .vectors import BadStreamCase, VectorFormatError, load_case

__all__ = ["StimulusError", "parse_inputs", "load_inputs", "load_vectors", "stimulus",
           "lane_counts"]


class StimulusError(ValueError):
    """A stimulus that cannot be run: a malformed or empty file, a size mismatch, conflicting
    or missing options."""


def lane_counts(width, height):
    """``{"N": width, "E": height, "S": width, "W": height}``: the lanes of each edge bus of a
    ``width`` x ``height`` grid."""
    return dict(zip(SIDES, (width, height) * 2))


def parse_inputs(text, width, height, *, where="<inputs>"):
    """The edge inputs of an edge-input stream (see the module docstring) for a ``width`` x
    ``height`` grid.

    :param text: the file's text.
    :param where: the file's name, for messages.
    :returns: a list of :class:`~bitgrid.terms.Edges`, one per subcycle (may be empty).
    :raises StimulusError: ``<where>: malformed edge-input stream: ...`` or
        ``<where>: step <t>: <side> has bits beyond its <n> lanes``.
    """
    try:
        if text.lstrip().startswith(("[", "{")):
            items = json.loads(text)
            if not isinstance(items, list):
                raise ValueError("a JSON edge-input stream is a list of {\"N\": \"0x..\", ...} "
                                 "objects, one per subcycle (for a vector file use --vectors)")
            items = [Edges.coerce(item) for item in items]
        else:
            items = []
            for number, line in enumerate(text.splitlines(), 1):
                line = line.split("#")[0].strip()
                if not line:
                    continue
                words = line.replace(",", " ").split()
                if len(words) != 4:
                    raise ValueError(f"line {number}: expected 4 hex words N E S W, got "
                                     f"{len(words)}")
                items.append(Edges(*(int(word, 16) for word in words)))
    except (ValueError, TypeError, AttributeError) as error:
        raise StimulusError(f"{where}: malformed edge-input stream: {error}") from None
    lanes = lane_counts(width, height)
    for t, edges in enumerate(items):
        for side, count in lanes.items():
            word = edges.side(side)
            if word >> count or word < 0:
                raise StimulusError(f"{where}: step {t}: {side} has bits beyond its {count} "
                                    "lanes")
    return items


def load_inputs(path, width, height):
    """:func:`parse_inputs` of the file ``path`` (UTF-8).

    :raises OSError: if the file cannot be read.
    :raises StimulusError: as :func:`parse_inputs`.
    """
    with open(path, encoding="utf-8") as file:
        text = file.read()
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
    :raises StimulusError: both or neither of ``vectors``/``inputs`` (and no ``steps``), an
        empty file, more ``steps`` than the vector file has, or a bad file.
    :raises OSError: if a file cannot be read.
    """
    if vectors and inputs:
        raise StimulusError("give either --vectors or --inputs, not both")
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
