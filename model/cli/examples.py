"""``bitgrid example`` and ``bitgrid demo``: the project's example programs, and the main job
(Verilog, then the 8-bit adder on the emulator and the RTL simulators)."""

import os
import sys
import time

import click

from bitgrid.emulator import Emulator
from bitgrid.files import atomic_write
from bitgrid.stimulus import load_vectors
from bitgrid.terms import SIMULATORS, STORAGES
from bitgrid.vectors import compare_step, load_case

from .common import load_bitstream
from .errors import EXIT_MISMATCH, EXIT_OK

__all__ = ["example", "demo", "DEMO_PAIRS"]

#: The ``(a, b)`` operands of ``bitgrid demo``.
DEMO_PAIRS = [(0, 0), (1, 1), (100, 55), (200, 100), (255, 1), (255, 255), (37, 219),
              (128, 128), (170, 85), (13, 242)]


@click.command()
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
    """Write one of the project's example programs (a .bgbs BitGrid program) plus a vector file.

    adder: an n-bit ripple-carry adder (a on W_in, b on E_in, sum on E_out, carry on S_out).
    text: 8 pass-through lanes W->E carrying a text stream, one byte per 2 subcycles.
    """
    from bitgrid import examples
    if program == "adder":
        path = examples.save_adder_case(output, n=bits, seed=seed, noise_seed=seed)
    else:
        path = examples.save_text_case(output, text=text, noise_seed=seed)
    case = load_case(path)
    program_path = (case.bitstream_path if os.path.isabs(path)      # as the vector file's
                    else os.path.relpath(case.bitstream_path))
    click.echo(f"wrote {path} and {program_path}: {case.width} x {case.height} grid, "
               f"{len(case.steps)} subcycles")


def _demo_rows(output, simulators, storage):
    """Write the Verilog and the adder's case into ``output``, then run the adder on the
    emulator and each simulator. Returns ``(adder, case, rows)``: ``rows[target]`` is
    ``(sums, run seconds, build seconds, mismatching lanes)``."""
    from bitgrid import examples
    from bitgrid.hdl.verilog import grid_verilog
    from bitgrid.sim import run_case
    started = time.monotonic()
    click.echo("[1/4] writing the Verilog of an 8 x 8 grid ...", err=True)
    text = grid_verilog(8, 8, storage=storage)
    verilog_path = os.path.join(output, "bitgrid_8x8.v")
    atomic_write(verilog_path, text)
    verilog_seconds = time.monotonic() - started

    adder = examples.adder(8)
    vectors_path = adder.save_case(output, DEMO_PAIRS, "adder8")
    bs = load_bitstream(os.path.join(output, "adder8.bgbs"), 8, 8)
    case = load_vectors(vectors_path, bs.width, bs.height)
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
    return adder, case, rows


@click.command()
@click.option("-o", "--output", type=click.Path(file_okay=False), default="out/demo",
              show_default=True, help="Folder for the Verilog, bitstream and vector file.")
@click.option("--simulator", "simulators", multiple=True, type=click.Choice(SIMULATORS),
              help="Simulators to run (repeatable; default both).")
@click.option("--storage", type=click.Choice(STORAGES), default="ff", show_default=True,
              help="Configuration storage of the simulated grid.")
def demo(output, simulators, storage):
    """The main job: Verilog of an 8 x 8 grid, then the 8-bit adder on the emulator, Icarus
    and Verilator, with a table of sums, agreement and times. Exit 1 if any target
    disagrees."""
    simulators = simulators or SIMULATORS
    os.makedirs(output, exist_ok=True)
    adder, case, rows = _demo_rows(output, simulators, storage)
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
