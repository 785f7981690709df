"""``bitgrid eval``: run a BitGrid program by port names, a CSV of input rows in, a CSV of
output rows out (:mod:`bitgrid.evaluate`)."""

import click

from bitgrid.terms import SIMULATORS

from .common import check_writable, load_bitstream, load_portmap
from .errors import BadInput, explain
from .params import Seconds
from .progress import Bar, progress_options

__all__ = ["eval_"]


@click.command("eval")
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@click.option("--ports", "ports_path", required=True, type=click.Path(dir_okay=False),
              metavar="PORTS.json", help="The program's port map (bitgrid-ports-v1, written by "
                                         "bitgrid asm and bitgrid compile; docs/ports.md).")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True),
              metavar="IN.csv",
              help="Input rows: a header of input port names, then one line of values per "
                   "design cycle (decimal or 0x hex; negative for signed ports); - reads "
                   "standard input.")
@click.option("--cycles", type=click.IntRange(1, 1_000_000), metavar="N",
              help="For a port map without input ports (a free-running counter): run N design "
                   "cycles instead of reading --csv.")
@click.option("--target", default="emu", show_default=True, metavar="TARGET",
              help="Where to run: emu (reference emulator), fast (bit-parallel emulator), sim "
                   "(the RTL grid in cocotb), mesh:COLSxROWS (the grid split over a simulated "
                   "mesh of chips, e.g. mesh:2x2), loopback (the Python model of a board's "
                   "host protocol), serial:PORT (a board, e.g. serial:/dev/ttyUSB0) or "
                   "bgcf:HOST:PORT (any BGCF server, bitgrid serve or a board behind it, e.g. "
                   "bgcf:127.0.0.1:7700; it is given the program).")
@click.option("--simulator", type=click.Choice(SIMULATORS), default="icarus",
              show_default=True, help="RTL simulator of --target sim and mesh:.")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Baud rate of a serial target.")
@click.option("--timeout", type=Seconds(0.01),
              help="Seconds to wait for each answer of a serial target (default 1) or a "
                   "bgcf: server (default 10).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True),
              metavar="OUT.csv",
              help="Write the output rows here (default, or -: standard output).")
@progress_options
def eval_(bitstream, ports_path, csv_path, cycles, target, simulator, baud, timeout, output,
          show_progress):
    """Run PROGRAM (a BitGrid program, .bgbs) by port names: one output row per input row.

    Row k of IN.csv holds the input ports' values during design cycle k; the output CSV
    (header: the output port names, values in decimal) has one row per input row, each output
    read when the port map's latency and skews say it holds that row's value. Rows stream
    through the pipeline, one per period; the fill and the drain are added here.
    Example, with the port map adder.ports.json of adder.bgbs:

    \b
      printf 'a,b\\n1,2\\n0xff,1\\n' > in.csv
      bitgrid eval adder.bgbs --ports adder.ports.json --csv in.csv
    """
    from bitgrid import evaluate as ev
    if output == "-":
        output = None
    bs = load_bitstream(bitstream)
    portmap = load_portmap(ports_path, bs.config, bitstream)
    if not portmap.outputs:
        raise BadInput(f"{ports_path}: the port map has no output ports, so there is nothing "
                       "to print")
    if portmap.inputs:
        if cycles is not None:
            raise BadInput(f"--cycles is for a port map without input ports; {ports_path} has "
                           f"{', '.join(p.name for p in portmap.inputs)}: give them in --csv")
        if csv_path is None:
            raise BadInput(f"give the input rows with --csv IN.csv (header: "
                           f"{','.join(p.name for p in portmap.inputs)})")
        rows = ev.read_csv(csv_path, portmap)
    else:
        if csv_path is not None:
            raise BadInput(f"{ports_path} has no input ports: run it with --cycles N instead "
                           "of --csv")
        if cycles is None:
            raise BadInput(f"{ports_path} has no input ports: give the number of design "
                           "cycles with --cycles N")
        rows = [{}] * cycles
    try:
        ev.check_target(target)
    except ValueError as error:
        raise BadInput(f"--target: {error}") from None
    if output is not None:
        from .transform import check_not_inputs
        check_not_inputs([(output, "the output rows")], [("PROGRAM", bitstream),
                                                         ("--ports", ports_path),
                                                         ("--csv", csv_path)])
        check_writable(output)
    explain("link", f"no device at {target}: {{error}}")
    explain("simulation", f"the {simulator} simulation failed to build or run: {{error}}")
    # Progress (and the simulator's build messages) only on a terminal, or when asked.
    with Bar(show_progress, desc="subcycles", unit="sc") as progress:
        result = ev.evaluate(bs.config, portmap, rows, target=target, simulator=simulator,
                             progress=progress if show_progress else None, baudrate=baud,
                             timeout=timeout)
    text = ev.format_csv(portmap, result)
    if output is None:
        click.echo(text, nl=False)
    else:
        from bitgrid.files import atomic_write
        atomic_write(output, text)
        click.echo(f"wrote {output}: {len(result)} rows of "
                   f"{', '.join(p.name for p in portmap.outputs)}", err=True)
