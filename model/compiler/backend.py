"""The compiler's back end: a LUT netlist to a BitGrid program and its port map (issue 12).

:func:`compile_netlist` compiles every candidate for the design and keeps the one with the
fewest cells x period, or with the ``area`` objective the fewest cells (docs/compiler.md
describes each back end with the papers and tools it follows):

* the library block of the operation the design is (:mod:`.blocks`), one cell for a small
  state machine (:mod:`.onecell`), registers retimed away (:mod:`.retime`);
* the sweep (:mod:`.sweep`) for each LUT mapping (the default);
* the general back end (:mod:`.general`: place, route, time, pad) for small designs no
  block takes (up to :data:`GENERAL_AREA_LUTS` LUT4s with the ``area`` objective), and with
  the systolic one (:mod:`.systolic`, combinational) where pins are fixed or the
  sweep does not fit a region, defect map or grid size.

Every program is pipelined: a new row of inputs every ``P`` subcycles (``P = 2``, one full
cycle, for a design without feedback; longer only with the ``area`` objective or where the
design must fit a region, defect map, grid size or pins: each row is then held ``P``
subcycles, :func:`.timing.solve_waves`), every row's outputs ``latency`` subcycles later,
each output bit ``skew`` subcycles earlier or later as the port map says; a flip-flop holds
its ``init`` in design cycle 0 (:mod:`.pack`, register gating). The result is checked
against :meth:`bitgrid.netlist.Netlist.simulate` by the tests in tests/model/compiler.
"""

import numbers
import time
import typing

from ..config import Configuration, check_grid_size
from ..netlist import START
from ..defects import DefectMap
from ..ports import PortMap
from ..terms import parse_side
from .errors import CompileError
from .general import OBJECTIVES, allowed_cells, compile_general, even_up, figure_of_merit

__all__ = ["CompileError", "CompileResult", "compile_netlist"]

#: Largest design (Yosys LUT4s) no block takes on which the general back end is tried beside
#: the sweep by default (its period is set by the placed loops, the sweep's by its rows, and
#: it uses every side of a cell: issue 36; ``bitgrid bench compile``, series ``sequential``
#: and the test designs); also the largest table tried on it beside the rom block.
GENERAL_CANDIDATE_LUTS = 32


#: With a library block for the design (``operation``), the LUT mappings are compiled beside it
#: only up to this many LUTs (above, on every test design, they took 4 to 120 times the
#: block's cells and most of the compile time). A memory's block is always kept alone: its
#: mappings are a loop per stored bit for the sequential back ends.
BLOCK_SEARCH_LUTS = 32


class CompileResult(typing.NamedTuple):
    """A compiled program: ``config`` (:class:`~bitgrid.config.Configuration`), ``portmap``
    (:class:`~bitgrid.ports.PortMap`) and ``report`` (a JSON-serialisable dict: ``grid``,
    ``region``, ``bounding_box``, ``cells`` (logic, routing, delay, total), ``luts``,
    ``flip_flops``, ``blocks``, ``period``, ``latency``, ``times`` in seconds per stage)."""
    config: Configuration
    portmap: PortMap
    report: dict


#: With the ``area`` objective, the general back end is also tried on designs no block takes
#: of up to this many Yosys LUT4s (measured on the EPFL circuits, 2026-12-07, idle 2-core
#: machine, its placer's moves and router's search compiled: `priority`, 173 LUT4s, 17 s;
#: `cavlc`, 282, 37 s; `i2c`, 431, 55 s; in pure Python before, 150 was the limit). Above,
#: the arithmetic circuits tried do not route: `bar` (1,156 LUT4s, a 128-bit barrel shifter)
#: stalls at 2,600 overused wires at pitch 4 on 156 x 156, after 164 s.
GENERAL_AREA_LUTS = 500


def compile_netlist(netlist, *, width=None, height=None, region=None, defects=None,
                    pins=None, seed=0, progress=None, alternatives=None, operation=None,
                    objective="area-time", composition=None):
    """Pack, place, route and time ``netlist`` into a program (module docstring).

    Each mapping of the design (``netlist`` and the ``alternatives``) is compiled, and so is
    the library block of ``operation`` (:mod:`.blocks`; without a region, defect map or pins;
    a block is kept without compiling the mappings above :data:`BLOCK_SEARCH_LUTS` LUTs),
    and the program with the fewest cells x period is kept (:func:`.general.figure_of_merit`); only
    ``netlist`` falls back to the older back ends (fixed pins; a region or defect map the
    sweep does not fit); a small state machine is also tried in one cell
    (:mod:`.onecell`) and a design no block takes (or a table beside its rom block), up to
    :data:`GENERAL_CANDIDATE_LUTS` LUT4s, on the general back end with padding alone
    (``lut4, general``). The report names the mapping kept
    (``mapping``: ``lut4``, ``lut3``, ``lut2``, ``blocks``, ``one-cell``, ``lut4, general``
    or a mapping ``, retimed``) and lists every candidate's back end, cells and period
    (``candidates``); ``times["total"]`` covers them all; ``compose_failed`` says why a
    ``composition`` did not lay out, where one was tried and failed.

    :param netlist: a :class:`bitgrid.netlist.Netlist` (the LUT4 mapping).
    :param alternatives: ``{name: Netlist}``, other mappings of the same design (same ports
        and flip-flops), such as :attr:`bitgrid.compiler.SynthesisResult.alternatives`; or
        None.
    :param operation: the :class:`~.operations.Operation` the design is
        (:attr:`bitgrid.compiler.SynthesisResult.operation`), or None.
    :param composition: the :class:`~.compose.Composition` the design is (a memory and the
        logic around it, :attr:`bitgrid.compiler.SynthesisResult.composition`), or None: its
        block and the glue on the general back end (``blocks, general``; without a size,
        region, defect map or pins), kept alone like a block above
        :data:`BLOCK_SEARCH_LUTS` LUTs.
    :param width, height: grid size in cells (even); ``None``: chosen to fit.
    :param region: ``(x0, y0, x1, y1)``, corners inclusive (SPEC section 10): only those cells
        are used and the ports are on the grid-edge lanes whose boundary cell is inside.
    :param defects: a :class:`bitgrid.defects.DefectMap` (its cells are never used).
    :param pins: ``{port: [(side, lane), ...]}``, one per bit, least significant first: port
        bits kept on those lanes.
    :param seed: placement seed.
    :param progress: ``progress(stage, done, total)`` (total 0 when unknown), or ``None``.
    :param objective: one of :data:`OBJECTIVES`: ``area`` also tries the general back end on
        designs of up to :data:`GENERAL_AREA_LUTS` LUT4s and keeps the fewest cells (its
        period may be tens of subcycles: every row held until the slowest path has read it,
        :func:`.timing.solve_waves`).
    :returns: :class:`CompileResult`.
    :raises CompileError: if the design does not fit the size or region (naming how many cells
        or lanes it needs and has), or cannot be routed there (the LUT4 mapping's error when
        no mapping fits).
    """
    started = time.perf_counter()
    if objective not in OBJECTIVES:
        raise ValueError(f"objective is one of {', '.join(OBJECTIVES)}, not {objective!r}")
    options = dict(width=width, height=height, region=region, defects=defects, pins=pins,
                   seed=seed, progress=progress)
    candidates, errors, optional = [], [], []
    if operation is not None and region is None and defects is None and not pins:
        from .blocks import compile_operation
        try:
            candidates.append(("blocks", compile_operation(operation, netlist, width=width,
                                                           height=height)))
        except CompileError as error:
            errors.append(error)
    composed = None
    if composition is not None and not candidates and width is None and height is None \
            and region is None and defects is None and not pins:
        from .compose import compile_composition
        try:
            candidates.append(("blocks, general", compile_composition(
                composition, netlist, seed=seed, progress=progress, objective=objective)))
        except CompileError as error:
            optional.append(error)
            composed = str(error)           # said in the report: the others are larger
    block_only = bool(candidates) and (len(netlist.luts) > BLOCK_SEARCH_LUTS
                                       or operation is not None and operation.kind == "memory")
    retimed = None
    if netlist.dffs and not pins and not block_only:
        from .retime import compile_retimed
        retimed = compile_retimed(netlist, alternatives, **options)
        if retimed is not None:
            candidates.append((f"{retimed.report.get('mapping', 'lut4')}, retimed", retimed))
    area = objective == "area"
    general_luts = GENERAL_AREA_LUTS if area else GENERAL_CANDIDATE_LUTS
    table = operation is not None and operation.kind == "rom"
    if region is None and defects is None and not pins and retimed is None \
            and (not candidates or table or area and len(netlist.luts) <= BLOCK_SEARCH_LUTS) \
            and len(netlist.luts) <= general_luts:
        # a small design no block takes: the general back end's loops are short and its
        # logic dense when it pads; a small table: its LUTs of the same address bits share
        # cells, four output bits to a cell (rom16x8: 28 cells at period 2 against the
        # block's 192, 2026-12-07)
        try:
            candidates.append(("lut4, general", compile_general(
                netlist, width=width, height=height, region=None, defects=None, fixed={},
                seed=seed, progress=progress, candidate=not area, any_period=area,
                objective=objective)))
        except CompileError as error:
            optional.append(error)
    if region is None and defects is None and not pins and retimed is None:
        from .onecell import compile_one_cell
        one = compile_one_cell(netlist, width=width, height=height)
        if one is not None:
            candidates.append(("one-cell", one))
    mappings = [("lut4", netlist), *(alternatives or {}).items()]
    if block_only or retimed is not None:
        # the block: the LUT mappings are far larger (docs/compiler.md); registers retimed:
        # the sequential back end's loops only make the period longer
        mappings = []
    for name, candidate in mappings:
        if candidate is not netlist and pins:
            continue
        try:
            candidates.append((name, _compile_mapping(candidate, fallback=candidate is netlist,
                                                      objective=objective, **options)))
        except CompileError as error:
            errors.append(error)
    if not candidates:
        # the mapping that needs the smallest grid names the size (the sweep's errors say
        # what it needs: ``needs``); else the LUT4 mapping's error (the general back end's
        # only if nothing else was tried)
        raise min(errors + optional, key=lambda e: getattr(e, "needs", (float("inf"),)))
    name, best = min(candidates, key=lambda c: figure_of_merit(c[1], objective))
    report = dict(best.report, mapping=name,
                  candidates=[{"mapping": n, "back_end": r.report.get("back_end"),
                               "cells": r.report["cells"]["total"],
                               "period": r.portmap.period} for n, r in candidates])
    report["times"] = dict(report.get("times", {}),
                           total=round(time.perf_counter() - started, 4))
    if composed is not None:
        report["compose_failed"] = composed
    return best._replace(report=report)


def _compile_mapping(netlist, *, width, height, region, defects, pins, seed, progress,
                     fallback, objective="area-time"):
    """One mapping of the design: the sweep; the older back ends with fixed pins, or (with
    ``fallback``) where the sweep does not fit a region, defect map or (up to
    :data:`GENERAL_AREA_LUTS` LUT4s: above, the general back end takes minutes) grid size."""
    if not pins:
        try:
            return _compile_sweep(netlist, width, height, region, defects, progress)
        except CompileError as error:
            sized = width is not None and len(netlist.luts) <= GENERAL_AREA_LUTS
            if region is None and defects is None and not sized or not fallback:
                raise
            # a region, defects or a grid the sweep does not fit: the other back ends place
            # around them, denser
            first = error
        try:
            return _compile_older(netlist, width, height, region, defects, pins, seed,
                                  progress, objective)
        except CompileError:
            raise first from None
    return _compile_older(netlist, width, height, region, defects, pins, seed, progress,
                          objective)


def _compile_older(netlist, width, height, region, defects, pins, seed, progress,
                   objective="area-time"):
    """The general back end (:func:`.general.compile_general`, at any period: fitting comes
    first here) and, for a combinational netlist whose fixed pins suit it, the systolic one
    (the better of the two for ``objective``): they take fixed pins and place around any
    region, defect map or grid size."""
    fixed = _check_pins(netlist, pins)
    reads_start = any(START in lut.inputs for lut in netlist.luts.values())
    results, first = [], None
    if not netlist.dffs and not reads_start and _systolic_sides(netlist, fixed):
        try:
            results.append(_compile_systolic(netlist, width, height, region, defects, pins,
                                             progress))
        except CompileError as error:
            first = error
    try:
        results.append(compile_general(netlist, width=width, height=height, region=region,
                                       defects=defects, fixed=fixed, seed=seed,
                                       progress=progress, any_period=True))
    except CompileError as error:
        if not results:
            raise first or error from None
    return min(results, key=lambda r: figure_of_merit(r, objective))


def _compile_sweep(netlist, width, height, region, defects, progress):
    """The default: the sweep back end (:mod:`.sweep`)."""
    from .sweep import compile_sweep
    started = time.perf_counter()
    width, height, region, allowed = _grid_and_cells(width, height, region, defects)
    config, portmap, report = compile_sweep(netlist, width=width, height=height,
                                            region=region, allowed=allowed,
                                            progress=progress)
    report["times"]["total"] = round(time.perf_counter() - started, 4)
    return CompileResult(config, portmap, report)


def _grid_and_cells(width, height, region, defects):
    """``(width, height, region, allowed)``: the grid (from the region or the defect map if
    not given), the region as a tuple, the usable cells (None: all, or no grid given).

    :raises CompileError: for a bad region, size or a lone width or height.
    """
    if region is not None:
        region = tuple(int(v) for v in region)
        if len(region) != 4:
            raise CompileError(f"a region is x0,y0,x1,y1, not {region!r}")
    if defects is not None and (width is None or height is None):
        if not isinstance(defects, DefectMap):
            raise TypeError(f"defects must be a bitgrid.defects.DefectMap, not {defects!r}")
        width, height = defects.width, defects.height
    if region is not None and (width is None or height is None):
        if width is None and height is None and region[2] % 2 == 0 and region[3] % 2 == 0:
            # the grid (even sides) would end a column and a row beyond the region
            raise CompileError(
                f"the region {','.join(map(str, region))} ends on column {region[2]} and row "
                f"{region[3]}, but without --size the grid is {even_up(region[2] + 1)} x "
                f"{even_up(region[3] + 1)} (sides are even): the region would touch neither "
                "its E nor its S edge, where the outputs leave; end the region on an odd "
                f"column or row (e.g. {region[0]},{region[1]},{region[2] + 1},"
                f"{region[3] + 1}) or give --size")
        width = even_up(region[2] + 1) if width is None else width
        height = even_up(region[3] + 1) if height is None else height
    allowed = None
    if width is not None and height is not None:
        try:
            width, height = check_grid_size(width, height)
        except ValueError as error:
            raise CompileError(str(error)) from None
        allowed = allowed_cells(width, height, region, defects)
    elif width is not None or height is not None:
        raise CompileError("give both the width and the height of the grid, or neither")
    return width, height, region, allowed


def _compile_systolic(netlist, width, height, region, defects, pins, progress):
    """Combinational netlists with fixed pins: the systolic back end (:mod:`.systolic`)."""
    from .systolic import compile_combinational
    started = time.perf_counter()
    fixed = _check_pins(netlist, pins)
    width, height, region, allowed = _grid_and_cells(width, height, region, defects)
    config, portmap, report = compile_combinational(
        netlist, width=width, height=height, region=region, allowed=allowed, pins=fixed,
        progress=progress)
    report["times"]["total"] = round(time.perf_counter() - started, 4)
    return CompileResult(config, portmap, report)


def _systolic_sides(netlist, fixed):
    """Whether the fixed lanes ``fixed`` (from :func:`_check_pins`) suit the systolic back end:
    inputs on N and W lanes, outputs on S and E lanes (its signals flow east and south). Pins
    elsewhere (a program relocated with its lanes kept, :mod:`bitgrid.relocate`) go to the
    general back end."""
    return all((side in (0, 3)) if name in netlist.inputs else (side in (1, 2))
               for (name, _), (side, _lane) in fixed.items())


def _check_pins(netlist, pins):
    fixed = {}
    if not pins:
        return fixed
    for name, lanes in pins.items():
        port = netlist.inputs.get(name) or netlist.outputs.get(name)
        if port is None:
            raise CompileError(f"pins name port {name!r}, which the design does not have")
        if len(lanes) != len(port.bits):
            raise CompileError(f"pins give {len(lanes)} lanes for port {name}, which has "
                               f"{len(port.bits)} bits")
        for i, (side, lane) in enumerate(lanes):
            try:
                side = int(parse_side(side))
            except ValueError as error:
                raise CompileError(f"pins give {name}[{i}] side {side!r}: {error}") from None
            if isinstance(lane, bool) or not isinstance(lane, numbers.Integral) or lane < 0:
                raise CompileError(f"pins give {name}[{i}] lane {lane!r}: a lane is a whole "
                                   "number from 0")
            fixed[(name, i)] = (side, int(lane))
    return fixed


