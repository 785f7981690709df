"""What the commands share: reading bitstreams and checking output paths (bad input: exit 2),
the run options and the printing of steps and verdicts."""

import json
import os

import click

from bitgrid.bitstream import BitstreamError
from bitgrid.bitstream import load as _load
from bitgrid.stimulus import MAX_STEPS, stimulus
from bitgrid.terms import SIDES, Edges
from bitgrid.vectors import format_mismatches

from .errors import EXIT_MISMATCH, EXIT_OK, BadInput

__all__ = ["load_bitstream", "load_portmap", "check_writable", "run_options",
           "refuse_json_with_vectors", "run_stimulus", "print_steps",
           "verdict"]


def load_bitstream(path, width=None, height=None):
    """The :class:`~bitgrid.bitstream.Bitstream` of the file ``path`` (with ``width`` and
    ``height``: checked to be for that size).

    :raises BadInput: ``<path>: bad bitstream: ...``.
    :raises OSError: if the file cannot be read.
    """
    try:
        return _load(path, width=width, height=height)
    except BitstreamError as error:
        raise BadInput(f"{path}: bad bitstream: {error}") from None


def load_portmap(path, config, program):
    """The port map in the file ``path``, checked to describe ``config`` (the program read
    from the file ``program``): the grid size, the digest and the seal where the file records
    them (:meth:`bitgrid.ports.PortMap.check_program`: a map changed after a tool wrote it is
    refused), and timing the program can hold. A map without a seal (written by hand) is
    checked against the program's paths instead (:func:`bitgrid.porttiming.check_port_timing`:
    refused if its latency reads another row or an input bit reaches no output), with one
    note on standard error saying what could not be checked.

    :raises BadInput: for a bad file, a port map of another program, a broken seal or an
        unsealed map whose timing disagrees with the program's paths (exit 2).
    :raises OSError: if the file cannot be read.
    """
    from bitgrid import ports
    from bitgrid.porttiming import check_port_timing
    try:
        portmap = ports.load(path)
        portmap.check_program(config, names=(str(path), str(program)))
    except ports.PortMapError as error:
        raise BadInput(str(error)) from None
    if portmap.sealed:
        return portmap
    check = check_port_timing(config, portmap)
    if check.problem is not None:
        raise BadInput(f"{path} (not sealed: written by hand or by an older bitgrid) does not "
                       f"fit {program}: {check.problem}; give the port map written with this "
                       "program")
    click.echo(f"note: {path} carries no seal (written by hand or by an older bitgrid); "
               f"{check.note}", err=True)
    return portmap


def check_writable(path, *, make_folder=False):
    """Fail early (exit 2) if ``path`` cannot be written, before a long build or run: it is a
    folder, or its folder does not exist (with ``make_folder``: cannot be made) or is not
    writable, or it is empty (``-o ''``), or ``-`` (standard output, which the commands
    that can write there handle before calling this)."""
    if not os.fspath(path).strip():
        raise BadInput("the output path is empty: give a file or folder name")
    if os.fspath(path) == "-":
        raise BadInput("-o -: this command writes a file, not standard output; give a file "
                       "name (./- for a file called -)")
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a folder, not a file")
    if make_folder and not os.path.isdir(folder):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise BadInput(f"{path}: cannot make its folder {folder}: "
                           f"{error.strerror or error}") from None
    if not os.path.isdir(folder):
        raise BadInput(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise BadInput(f"{path}: folder {folder} is not writable")


def run_options(function):
    """The stimulus options of ``emulate``, ``sim`` and ``run``: ``--vectors``, ``--inputs``,
    ``--steps`` and ``--json``."""
    function = click.option("--vectors", type=click.Path(dir_okay=False),
                            help="bitgrid-vectors-v1 file: apply its inputs, check its outputs.")(
        function)
    function = click.option("--inputs", type=click.Path(dir_okay=False),
                            help="Edge-input stream: a JSON list of {\"N\": \"0x..\", ...} hex "
                                 "words, or one line of 4 hex words N E S W per subcycle ('#' "
                                 "starts a comment); prints the outputs.")(function)
    function = click.option("--steps", type=click.IntRange(0, MAX_STEPS),
                            help=f"Subcycles to run, at most {MAX_STEPS} (with --inputs: repeat "
                                 "the last input; alone: zero inputs).")(function)
    function = click.option("--json", "as_json", is_flag=True,
                            help="Print the steps as JSON (the vectors 'steps' form).")(function)
    return function


def refuse_json_with_vectors(vectors, as_json):
    """Bad input: ``--json`` prints the outputs of runs without ``--vectors``."""
    if vectors and as_json:
        raise BadInput("--json prints the outputs of --inputs/--steps runs; with --vectors the "
                       "result is the PASS/MISMATCH report")


def run_stimulus(bitstream, vectors, inputs, steps, as_json):
    """``(case or None, list of input Edges)`` of the run options
    (:func:`bitgrid.stimulus.stimulus`), refusing ``--json`` with ``--vectors``."""
    refuse_json_with_vectors(vectors, as_json)
    return stimulus(bitstream.width, bitstream.height, vectors=vectors, inputs=inputs,
                    steps=steps)


def print_steps(inputs, outputs, width, height, as_json):
    """Print the edge outputs of each subcycle as a table (or, ``as_json``, the inputs and
    outputs in the vector file's ``steps`` form)."""
    if as_json:
        steps = [{"in": Edges.coerce(i).hex_words(width, height),
                  "out": Edges.coerce(o).hex_words(width, height)}
                 for i, o in zip(inputs, outputs)]
        click.echo(json.dumps({"width": width, "height": height, "steps": steps}, indent=1))
        return
    widths = [max(6, (w + 3) // 4 + 2) for w in (width, height) * 2]
    click.echo(f"{'step':>5}  " + "  ".join(f"{s + '_out':>{w}}" for s, w in zip(SIDES, widths)))
    for t, o in enumerate(outputs):
        words = Edges.coerce(o).hex_words(width, height)
        click.echo(f"{t:>5}  " + "  ".join(f"{words[s]:>{w}}" for s, w in zip(SIDES, widths)))


def verdict(name, mismatches, steps):
    """Print ``PASS`` or the ``MISMATCH`` report of a run; returns its exit status."""
    if mismatches:
        first = mismatches[0].step
        click.echo(f"MISMATCH: {name}: {len(mismatches)} lane(s) differ, first at step {first}")
        click.echo(format_mismatches(mismatches))
        return EXIT_MISMATCH
    click.echo(f"PASS: {name}: all {steps} steps match")
    return EXIT_OK
