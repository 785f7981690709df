"""The place-and-route and Tiny Tapeout parts of ``bitgrid asic`` (``--place-route``,
``--tinytapeout``; issue 14, docs/asic.md): what the options do, called from
:mod:`bitgrid.cli.asic`."""

import json

import click

from .errors import BadInput

__all__ = ["check_place_route", "place_route_command", "tinytapeout_command"]


def _say(progress):
    def say(stage):
        if progress:
            click.echo(f"bitgrid asic: {stage}", err=True)
    return say


def check_place_route(pdk):
    """Refuse ``--place-route`` before any work: another PDK than osu018 (OpenROAD is
    missing), or a missing qflow tool (exit 2, naming the install command)."""
    from bitgrid.asic.pnr import check_pdk, require_tools
    check_pdk(pdk)
    require_tools()


def place_route_command(report, *, width, height, storage, pdk, out_dir, progress):
    """Run :func:`bitgrid.asic.pnr.place_route` into ``out_dir/pnr``, put its result under
    ``report["place_route"]`` and rewrite the report files; returns the report."""
    from pathlib import Path
    from bitgrid.asic.pnr import place_route
    from bitgrid.asic.report import write_report
    say = _say(progress)
    result = place_route(width=width, height=height, storage=storage, pdk=pdk,
                         out_dir=Path(out_dir) / "pnr",
                         progress=lambda stage: say(f"place and route: {stage}"))
    report["place_route"] = result.as_dict()
    write_report(report, out_dir)
    if not result.lvs_clean:
        raise BadInput(f"LVS is not clean ({result.lvs['result'] or 'no result'}); see "
                       f"{result.project_dir}/log/lvs.out")
    return report


def tinytapeout_command(*, pdk, pdk_root, width, height, storage, vectors_path, out_dir,
                        progress, as_json, place_route):
    """Write the Tiny Tapeout folder (:func:`bitgrid.asic.tinytapeout.write_project`) with
    the tile count of a sky130 synthesis of its core, and print what was written."""
    from pathlib import Path
    from bitgrid.asic import tinytapeout
    if place_route:
        raise BadInput("--tinytapeout and --place-route are separate runs; give one of them")
    if pdk not in (None, "sky130"):
        raise BadInput("--tinytapeout sizes the project on sky130 (the shuttle's PDK); drop "
                       "--pdk or give --pdk sky130")
    say = _say(progress)
    if vectors_path is not None:
        from bitgrid import vectors
        case = vectors.load_case(vectors_path)
        if isinstance(case, vectors.BadStreamCase):
            raise BadInput(f"{vectors_path} is a bad-bitstream case, not a program with "
                           "vectors; give a case with steps")
        if (case.width, case.height) != (width, height):
            raise BadInput(f"{vectors_path} is a {case.width} x {case.height} case; give "
                           f"--size {case.width}x{case.height}")
        config, steps, name = case.load_bitstream().config, case.steps, f"case {case.name}"
    else:
        config, steps, name = tinytapeout.default_case(width, height)
    out = Path(out_dir)
    say(f"synthesising the {width} x {height} Tiny Tapeout core to sky130 for its area")
    area, source = tinytapeout.core_area(width, height, out / "synth_sky130", storage=storage,
                                         pdk_root=pdk_root)
    shape, count = tinytapeout.tiles_for_area(area)
    if shape is None:
        raise BadInput(f"a {width} x {height} grid with {storage} storage needs {count} Tiny "
                       f"Tapeout tiles ({area:,.0f} um2 on sky130), more than the largest "
                       f"shape {tinytapeout.TILE_SHAPES[-1]}; give a smaller --size"
                       + (" or --storage latch" if storage == "ff" else ""))
    say(f"writing the project folder {out}")
    info = tinytapeout.write_project(out, width=width, height=height, storage=storage,
                                     config=config, steps=steps, case_name=name,
                                     area_um2=area, area_source=source)
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        tiles = info["tiles"]
        click.echo(f"Tiny Tapeout project {info['top']} in {info['path']}\n"
                   f"  core area   {area:,.0f} um2 on sky130 -> tiles {tiles}\n"
                   f"  lane banks  {info['banks']}\n"
                   f"  test        {name}: cd {out / 'test'} && make   "
                   f"(or make SIM=verilator)")
    return None
