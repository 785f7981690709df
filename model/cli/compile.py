"""``bitgrid compile``: a Verilog, Amaranth or expression design to a BitGrid program, its port
map and a report (:mod:`bitgrid.compiler`, issue 12)."""

import os

import click

from .common import check_writable
from .errors import BadInput
from .params import SizeType
from .progress import Stages, progress_options

__all__ = ["compile_"]

#: Stage names as the progress display shows them.
STAGES = {"synthesis": "synthesis (Yosys)", "pack": "packing", "place": "placement",
           "route": "routing", "timing": "timing", "check": "check (emulator vs design)"}


def _parameter(text):
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise BadInput(f"--param {text!r}: write NAME=VALUE, e.g. --param WIDTH=8")
    try:
        return name.strip(), int(value, 0)
    except ValueError:
        return name.strip(), value


def _summary(report, paths):
    cells = report.get("cells", {})
    grid = report.get("grid") or ["?", "?"]
    parts = [f"{report['top']}: {report['yosys']['luts']} LUTs and "
             f"{report['yosys']['flip_flops']} flip-flops (Yosys) -> "
             f"{cells.get('total', '?')} cells (logic {cells.get('logic', '?')}, routing "
             f"{cells.get('routing', '?')}, delay {cells.get('delay', '?')}) on a "
             f"{grid[0]} x {grid[1]} grid",
             f"period {report.get('period', '?')} subcycles, latency "
             f"{report.get('latency', '?')} subcycle{'' if report.get('latency') == 1 else 's'}"
             + (f", depth {report['depth']} (subcycles until a row's last output bit)"
                if report.get("depth", report.get("latency")) != report.get("latency")
                else ""),
             (f"block {', '.join(report['blocks'])}" if report.get("back_end") == "blocks"
              else f"{report.get('back_end', '?')} back end"),
             *([f"registers as port timing (outputs up to "
                f"{report['registers']['history']} row"
                f"{'s' if report['registers']['history'] != 1 else ''} behind)"]
               if report.get("registers", {}).get("history") is not None else []),
             (f"checked on {report['checked']} "
              f"{'cycles' if report.get('flip_flops') else 'rows'}" if report.get("checked")
              else "not checked"),
             f"{report.get('total_time', 0):.1f} s"]
    return "; ".join(parts) + "\nwrote " + ", ".join(str(p) for p in paths)


@click.command("compile")
@click.argument("sources", nargs=-1, type=click.Path(dir_okay=False), metavar="[SOURCE.v]...")
@click.option("--top", metavar="NAME",
              help="The top module (Verilog: needed when the sources declare more than one "
                   "module; Amaranth and --expr: the design's name, "
                   "default the class name or 'expr'). Output files are NAME.*.")
@click.option("--amaranth", metavar="MODULE:NAME",
              help="An Amaranth Component or Elaboratable: mypkg.alu:ALU(width=8) or "
                   "path/alu.py:ALU (literal arguments only).")
@click.option("--expr", metavar="TEXT",
              help="A one-line design: OUTPUT = EXPRESSION[; ...] in Python syntax, e.g. "
                   "\"p = a * b\" (exact integer results; docs/compile.md).")
@click.option("--vars", "variables", metavar="NAME:WIDTH,...",
              help="With --expr: the inputs' widths, s for signed (a:8,b:s8); an output named "
                   "here is wrapped to that width.")
@click.option("--param", "parameters", multiple=True, metavar="NAME=VALUE",
              help="A parameter of the Verilog top (repeatable), e.g. --param WIDTH=8.")
@click.option("--size", type=SizeType(), metavar="WxH",
              help="The grid to fit into, in cells (even sides); default the smallest that "
                   "fits.")
@click.option("--defects", "defects_path", type=click.Path(dir_okay=False), metavar="MAP",
              help="A bitgrid-defects-v1 map (SPEC section 10): its cells are not used.")
@click.option("--region", metavar="x0,y0,x1,y1",
              help="Use only the cells of this rectangle (corners inclusive, either corner "
                   "first), leaving the rest "
                   "of the grid untouched (with --size: the whole grid; default: just large "
                   "enough for the region).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Placement seed of the general back end (tried beside the sweep on "
                   "small designs no library block takes, and for fixed pins or a region or "
                   "defect map the sweep cannot fit); the sweep ignores it. The same seed "
                   "gives the same program.")
@click.option("--objective", type=click.Choice(["area-time", "area"]), default="area-time",
              show_default=True,
              help="What to minimise: cells x period (area-time), or cells (area: the "
                   "general back end also on designs of up to 500 LUT4s, with a period of "
                   "tens of subcycles where that saves cells). With --size, a program the "
                   "sweep cannot fit (up to 500 LUT4s) goes to the general back end either way.")
@click.option("-o", "--output", type=click.Path(file_okay=False), required=True,
              metavar="DIR", help="Folder for NAME.bgbs, NAME.ports.json, NAME.report.json.")
@click.option("--check/--no-check", default=True, show_default=True,
              help="Run the program on the bit-parallel emulator against the design's own "
                   "simulation before writing it (every input combination up to 16 input "
                   "bits, else 1,000 random rows or cycles); a difference is a compiler bug, "
                   "exit 2, nothing written.")
@progress_options
def compile_(sources, top, amaranth, expr, variables, parameters, size, defects_path, region,
             seed, objective, output, check, show_progress):
    """Compile a design into a BitGrid program (.bgbs) with its port map and a report.

    One design: Verilog/SystemVerilog SOURCE files with --top (through Yosys), an Amaranth
    design with --amaranth, or an expression with --expr and --vars. The design is
    synthesised to 4-input LUTs and flip-flops (one clock; latches, tristates, asynchronous
    resets and several clocks are refused, exit 2; simulation-only statements such as
    $display, $finish and assertions are dropped with a note naming their lines), packed,
    placed, routed and balanced so that a new input row can enter every period. A design
    that is one arithmetic operation (a multiply, an add, comparisons, an accumulator or
    counter) becomes the library's block for it, a state machine of at most 4 state and
    input bits one cell (neither with --region or --defects). Writes DIR/NAME.bgbs,
    DIR/NAME.ports.json (bitgrid-ports-v1: lanes, period, latency, skews) and
    DIR/NAME.report.json (cells used, period, latency, times per stage). Before writing, the
    program is run on the bit-parallel emulator against the design's own simulation
    (--no-check skips it). Run the program by port names with bitgrid eval.

    \b
    Examples:
      bitgrid compile --expr "p = a * b" --vars a:8,b:8 -o out/mul
      bitgrid compile counter.v --top counter --size 48x32 -o out/counter
      bitgrid compile --amaranth 'mypkg.alu:ALU(width=8)' -o out/alu
      bitgrid eval out/mul/expr.bgbs --ports out/mul/expr.ports.json --csv in.csv
    """
    from bitgrid.compiler import compile as compile_design
    from bitgrid.compiler import output_paths, write_outputs
    from bitgrid.compiler.flow import read_defects
    from bitgrid.compiler.frontend import dropped_note
    if sources and (amaranth or expr):
        raise BadInput("give Verilog SOURCE files, --amaranth or --expr, not several")
    if not sources and not amaranth and not expr:
        raise BadInput("nothing to compile: give SOURCE.v files with --top, --amaranth "
                       "MODULE:NAME or --expr TEXT; see 'bitgrid compile --help'")
    if top is not None and not top.strip():
        raise BadInput("--top is empty: give the top module's name (with --expr: the "
                       "program's name), or leave --top out")
    if not output.strip():
        raise BadInput("-o is empty: give the folder for the program, its port map and report")
    if sources and not top:
        import pathlib
        from bitgrid.compiler.frontend import module_names
        modules = module_names([pathlib.Path(s) for s in sources])
        if len(modules) != 1:
            listed = f" (the sources declare {', '.join(modules[:8])}" \
                f"{' ...' if len(modules) > 8 else ''})" if modules else ""
            raise BadInput(f"--top NAME is needed with Verilog sources (the top module's "
                           f"name){listed}")
        top = modules[0]            # one module: it is the top
    if variables and not expr:
        raise BadInput("--vars goes with --expr")
    if expr and not variables:
        raise BadInput("--expr needs --vars with the inputs' widths, e.g. --vars a:8,b:8")
    if output == "-":
        raise BadInput("-o -: -o is the folder that NAME.bgbs, NAME.ports.json and "
                       "NAME.report.json go into, not standard output; give a folder, e.g. "
                       "-o out")
    if output.lower().endswith((".bgbs", ".json", ".bga")) and not os.path.isdir(output):
        raise BadInput(f"-o {output}: -o is the folder that NAME.bgbs, NAME.ports.json and "
                       "NAME.report.json go into (NAME: the top); give a folder, e.g. -o out")
    defects = read_defects(defects_path)     # before any folder is made: a bad map writes nothing
    names = [top or "expr"] if expr or top else []
    for name in names:
        for path in output_paths(output, name):
            check_writable(str(path), make_folder=True)
    with Stages(show_progress, names=STAGES, units={"synthesis": "pass"}) as progress:
        result = compile_design(
            list(sources) or None, top=top, amaranth=amaranth, expr=expr, vars=variables,
            parameters=dict(_parameter(p) for p in parameters) or None,
            width=size[0] if size else None, height=size[1] if size else None,
            region=region, defects=defects, seed=seed, progress=progress, check=check,
            objective=objective)
    paths = write_outputs(result, output)
    note = dropped_note(result.report.get("dropped"))
    if note:
        click.echo(f"note: {note}", err=True)
    for note in result.report.get("check_notes", ()):
        click.echo(f"note: {note}", err=True)
    if result.report.get("compose_failed"):
        click.echo("note: the design's memory as its block with the logic laid out around it "
                   f"did not lay out ({result.report['compose_failed']}); another back end's "
                   "program is kept, right but larger", err=True)
    click.echo(_summary(result.report, paths))
