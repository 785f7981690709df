"""``bitgrid view``: a picture (SVG, PNG) or the HTML stepper of a BitGrid program, optionally
with a run on the reference emulator (:mod:`bitgrid.view`)."""

import importlib
import os
import sys

import click

from bitgrid.stimulus import MAX_STEPS, stimulus
from bitgrid.vectors import compare_step

from .common import check_writable, load_bitstream, load_portmap, verdict
from .errors import EXIT_OK, BadInput
from .progress import Bar, progress_options

__all__ = ["view"]


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@click.option("--ports", "ports_path", type=click.Path(dir_okay=False), metavar="PORTS.json",
              help="Port map (bitgrid-ports-v1, as written by asm and compile): label the "
                   "lanes of each named port.")
@click.option("--vectors", type=click.Path(dir_okay=False),
              help="bitgrid-vectors-v1 file: run its inputs on the reference emulator and show "
                   "the signals (exit 1 if the outputs differ from the file's).")
@click.option("--inputs", type=click.Path(dir_okay=False),
              help="Edge-input stream (as for bitgrid emulate): run it and show the signals.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), metavar="IN.csv",
              help="Input rows by port name, as for bitgrid eval (needs --ports): run them "
                   "through the pipeline, fill and drain included, and show the signals.")
@click.option("--steps", type=click.IntRange(0, MAX_STEPS), metavar="N",
              help="Subcycles to run (with --inputs: repeat the last input; alone: zero "
                   "inputs; with --vectors: the first N steps).")
@click.option("--frame", type=click.IntRange(min=0), metavar="K",
              help="For .svg/.png with a run: show the signals after K subcycles (default: "
                   "after the last). The HTML page steps through all of them.")
@progress_options
@click.option("--title", help="Heading of the picture or page (default: the program's file "
                              "name).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              metavar="OUT.svg|OUT.png|OUT.html", help="File to write; its suffix chooses the "
                                                      "kind.")
def view(bitstream, ports_path, vectors, inputs, csv_path, steps, frame, show_progress, title,
         output):
    """Draw PROGRAM (a BitGrid program, .bgbs): every cell with its function, the phases, the
    edge lanes and named ports; with a run, the value of every cell output.

    .svg and .png are pictures (matplotlib: pip install 'bitgrid[view]'); .html is one
    self-contained page that steps through the run subcycle by subcycle (play, step, zoom
    and pan, a cell's LUTs and values on hover). Examples:

    \b
      bitgrid view out/adder8.bgbs -o out/adder8.svg
      bitgrid view out/adder8.bgbs --vectors out/adder8.json -o out/adder8.html
      bitgrid view out/adder8.bgbs --vectors out/adder8.json --frame 20 -o out/adder8.png
      bitgrid view out/mul4.bgbs --ports out/mul4.ports.json --csv in.csv -o out/mul4.html
    """
    from bitgrid.view import SUFFIXES, record
    from bitgrid.view import view as draw
    suffix = os.path.splitext(output)[1].lower()
    if suffix not in SUFFIXES:
        raise BadInput(f"{output}: give a file name ending in .svg, .png or .html")
    if frame is not None and suffix == ".html":
        raise BadInput("--frame chooses the subcycle of an .svg or .png picture; the HTML page "
                       "steps through all of them")
    check_writable(output)
    bs = load_bitstream(bitstream)
    portmap = None
    if ports_path is not None:
        portmap = load_portmap(ports_path, bs.config, bitstream)
    case = trace = stream = None
    if csv_path is not None:
        if vectors or inputs:
            raise BadInput("give one of --vectors, --inputs and --csv")
        if portmap is None:
            raise BadInput("--csv names ports: give the program's port map with --ports")
        from bitgrid.evaluate import edge_inputs, read_csv
        stream = edge_inputs(portmap, read_csv(csv_path, portmap))
        if steps is not None:                 # cut, or hold the last input for more steps
            stream = (stream + stream[-1:] * steps)[:steps]
            if not stream:
                raise BadInput("--steps 0: nothing to run; give at least 1 subcycle")
    elif vectors or inputs or steps is not None:
        case, stream = stimulus(bs.width, bs.height, vectors=vectors, inputs=inputs,
                                steps=steps)
    if stream is not None:
        with Bar(show_progress, desc="running", unit=" subcycles") as bar:
            trace = record(bs.config, stream, progress=bar)
    if frame is not None:
        if trace is None:
            raise BadInput("--frame shows the signals of a run: add --vectors, --inputs, --csv or "
                           "--steps")
        if frame > trace.subcycles:
            raise BadInput(f"--frame {frame}: the run has {trace.subcycles} subcycles; give 0 "
                           f"to {trace.subcycles}")
    if suffix in (".svg", ".png"):
        try:
            importlib.import_module("matplotlib")       # what bitgrid.view.picture draws with
        except ImportError:
            raise BadInput("SVG and PNG pictures need matplotlib: pip install 'bitgrid[view]' "
                           "(or write .html, which needs nothing more)") from None
    draw(bs.config, output, portmap=portmap, trace=trace, frame=frame,
         title=title or os.path.basename(bitstream))
    configured = int((bs.config.luts != 0).any(axis=2).sum())
    shown = ""
    if trace is not None:
        shown = (f", {trace.subcycles} subcycles" if suffix == ".html" else
                 f", signals after {trace.subcycles if frame is None else frame} of "
                 f"{trace.subcycles} subcycles")
    click.echo(f"wrote {output}: {bs.width} x {bs.height} grid, {configured} cells "
               f"configured{shown}", err=case is not None)
    if case is None:
        sys.exit(EXIT_OK)
    mismatches = [m for t, o in enumerate(trace.edge_outputs)
                  for m in compare_step(t, case.steps[t][1], o, bs.width, bs.height)]
    sys.exit(verdict(case.name, mismatches, trace.subcycles))
