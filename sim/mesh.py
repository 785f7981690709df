"""A simulated mesh of chips (``bitgrid sim --mesh``): builds a :class:`~bitgrid.hdl.mesh.Mesh`
for Icarus or Verilator through the shared runner (:mod:`bitgrid.sim.runner`: same cache, same
back ends) and runs :mod:`bitgrid.sim.testbench.mesh` on it.

Every case is checked first (:func:`bitgrid.sim.api.make_case`): the configuration is the
*global* one, and must split into equal tiles of even size for the mesh shape
(:meth:`bitgrid.mesh.MeshShape.tile_size`); each tile gets its slice through its own
configuration port.
"""

import dataclasses

from bitgrid.checks import check_bool, check_int
from bitgrid.faults import FaultSpec
from bitgrid.hdl.link.ddr import MAX_LATENCY
from bitgrid.mesh import MeshShape
from bitgrid.terms import Direction, Edges
from bitgrid.toolchain import setup_environment
from bitgrid.vectors import Mismatch, load_case

from . import backends
from . import runner as _runner
from .builds import build_design
from .cache import cached_verilog
from .api import (SimCase, _check_options, _vector_sim_case, job_case, make_case,
                  mismatch_lines)
from .testbench.mesh import FAULT_COUNTERS, MESH_JOB_FORMAT

__all__ = ["MESH_TOP", "MeshDesign", "MeshResult", "mesh_verilog_file", "build_mesh",
           "run_mesh_cases", "run_mesh_case", "run_mesh_vector_files", "TEST_MODULE"]

#: Module name of the simulated mesh top.
MESH_TOP = "bitgrid_mesh"
#: The cocotb test module run on a mesh build.
TEST_MODULE = "bitgrid.sim.testbench.mesh"


@dataclasses.dataclass(frozen=True)
class MeshDesign:
    """The parameters of a simulated :class:`~bitgrid.hdl.mesh.Mesh` (all that decides its
    Verilog).

    :attr shape: :class:`~bitgrid.mesh.MeshShape` (chips).
    :attr tile_width, tile_height: cells per chip (even).
    :attr lanes: data lanes per link direction; :attr ddr: double data rate.
    :attr storage: grid storage back end; :attr faults: fault models built in.
    :attr replay_depth, timeout: link layer parameters (frames, cycles).
    :attr line_delay: extra transmit latency of every link (cycles).
    :attr input_latency, output_latency: latency of the links' receive and transmit I/O
        buffers (cycles; :mod:`bitgrid.hdl.link.ddr`: 1, or 3 for an ECP5 DDR output).
    """
    shape: MeshShape
    tile_width: int
    tile_height: int
    lanes: int = 1
    ddr: bool = False
    storage: str = "ff"
    faults: bool = True
    replay_depth: int = 4
    timeout: int = 256
    line_delay: int = 0
    input_latency: int = 1
    output_latency: int = 1
    #: The whole grid's LUT tables compiled into the gateware (a flat row-major tuple, N E S
    #: W per cell: a fixed-configuration mesh, SPEC section 7), or None.
    init: tuple = None

    @classmethod
    def for_grid(cls, width, height, shape, **options):
        """The design that runs a ``width`` x ``height`` grid on ``shape`` chips.

        :raises ValueError: if the grid does not split into equal tiles of even size."""
        shape = shape if isinstance(shape, MeshShape) else MeshShape.parse(str(shape))
        tile_width, tile_height = shape.tile_size(width, height)
        return cls(shape, tile_width, tile_height, **options)

    @property
    def width(self):
        return self.shape.cols * self.tile_width

    @property
    def height(self):
        return self.shape.rows * self.tile_height

    def verilog_arguments(self):
        """The keyword arguments of :func:`bitgrid.hdl.verilog.mesh_verilog` (and of
        :class:`~bitgrid.hdl.mesh.Mesh`) for this design."""
        return {"cols": self.shape.cols, "rows": self.shape.rows,
                "tile_width": self.tile_width, "tile_height": self.tile_height,
                "lanes": self.lanes, "ddr": self.ddr, "storage": self.storage,
                "faults": self.faults, "replay_depth": self.replay_depth,
                "timeout": self.timeout, "line_delay": self.line_delay,
                "input_latency": self.input_latency, "output_latency": self.output_latency,
                **({"init": list(self.init)} if self.init is not None else {})}

    def gateware(self):
        """A new :class:`~bitgrid.hdl.mesh.Mesh` of this design."""
        from bitgrid.hdl.mesh import Mesh
        from bitgrid.hdl.verilog import as_configuration
        arguments = self.verilog_arguments()
        arguments["init"] = as_configuration(arguments.get("init"), self.width, self.height)
        return Mesh(**arguments)

    @property
    def stem(self):
        return (f"mesh-{self.shape}-{self.tile_width}x{self.tile_height}-{self.storage}"
                f"-{self.lanes}{'ddr' if self.ddr else 'sdr'}{'-faults' if self.faults else ''}"
                f"{f'-d{self.line_delay}' if self.line_delay else ''}"
                f"{self._latency_suffix}{'-fixed' if self.init is not None else ''}")

    @property
    def _latency_suffix(self):
        latencies = (self.input_latency, self.output_latency)
        return "" if latencies == (1, 1) else f"-io{latencies[0]}{latencies[1]}"

    def __str__(self):
        return (f"{self.shape} mesh of {self.tile_width}x{self.tile_height} {self.storage} tiles, "
                f"{self.lanes} {'DDR' if self.ddr else 'SDR'} lane(s) per link"
                f"{f', line delay {self.line_delay} cycles' if self.line_delay else ''}"
                f"{self._latency_text}")

    @property
    def _latency_text(self):
        if (self.input_latency, self.output_latency) == (1, 1):
            return ""
        return (f", I/O buffer latency {self.input_latency} in, {self.output_latency} out")


def mesh_verilog_file(design, *, quiet=False):
    """Path of the cached Verilog of ``design`` (top module :data:`MESH_TOP`), generated with
    :func:`bitgrid.hdl.verilog.mesh_verilog` on first use (see
    :func:`bitgrid.sim.cache.cached_verilog`)."""
    from bitgrid.hdl.verilog import mesh_verilog
    return cached_verilog(design.stem, mesh_verilog, str(design), quiet=quiet,
                          **design.verilog_arguments(), name=MESH_TOP)


def build_mesh(design, *, simulator="icarus", waves=None, quiet=False):
    """Build (or find in the cache) the simulation model of ``design``; a
    :class:`~bitgrid.sim.builds.Build`. Errors as :func:`bitgrid.sim.builds.build`."""
    backend = backends.backend(simulator)
    setup_environment()
    backend.require(waves)
    verilog = mesh_verilog_file(design, quiet=quiet)
    return build_design(verilog, MESH_TOP, design.stem, f"{simulator} {design}",
                        simulator=simulator, waves=waves, quiet=quiet, width=design.width,
                        height=design.height, storage=design.storage, mesh=design)


@dataclasses.dataclass
class MeshResult:
    """The outcome of one case on a simulated mesh.

    :attr outputs: global edge outputs after each step (:class:`~bitgrid.Edges`).
    :attr mismatches, emulator_mismatches: against the vector file and against the reference
        emulator of the whole grid.
    :attr state_mismatches: ``(step, col, row, x, y, direction, expected, actual)`` for cell
        outputs (global ``x, y``) that differed from the emulator's after a step (the first
        100; :attr:`state_mismatch_count` counts them all).
    :attr readback_errors: ``(tile, row, addr, expected, actual)`` per differing frame.
    :attr stalled: why the mesh stopped making progress, or None.
    :attr links: per link (transmit direction) a dict of counters: ``link`` ``[col, row,
        side]``, ``aligned``, the link layer's and the physical layer's counters and, with
        faults, what the fault models injected.
    :attr stalls: per tile, cycles spent waiting at the barrier.
    :attr step_cycles: cycles of tile 0's clock that each step took.
    """
    name: str
    simulator: str
    design: MeshDesign
    faults: FaultSpec
    steps: int
    outputs: list
    mismatches: list
    emulator_mismatches: list
    state_mismatches: list
    state_mismatch_count: int
    readback_errors: list
    config_ok: bool
    subcycles: list
    stalled: str
    links: list
    stalls: list
    step_cycles: list
    run_ns: float
    build_seconds: float
    build_cached: bool
    run_seconds: float
    process_seconds: float

    @property
    def ok(self):
        return (not self.mismatches and not self.emulator_mismatches
                and not self.state_mismatch_count and not self.readback_errors
                and self.config_ok and not self.stalled
                and all(s == self.steps for s in self.subcycles))

    def totals(self):
        """Counters summed over every link (a dict)."""
        totals = {}
        for link in self.links:
            for name, value in link.items():
                if name not in ("link", "aligned"):
                    totals[name] = totals.get(name, 0) + value
        return totals

    @property
    def survived(self):
        """The mesh computed what one big grid computes, whatever the faults: no difference from
        the reference emulator (edges or cell states), no stall. (A wrong vector file is not
        the mesh's fault.)"""
        return (not self.emulator_mismatches and not self.state_mismatch_count
                and not self.stalled and all(s == self.steps for s in self.subcycles))

    def directions(self):
        """Per link direction, the counters of both ends: a list of dicts with ``from`` and
        ``to`` (``(col, row, side)``), the transmitter's ``frames_sent``, ``retransmits``,
        ``timeouts``, ``acks_sent`` and injected faults, and the receiver's ``aligned``,
        ``align_losses``, ``header_errors``, ``crc_errors`` and ``sequence_errors`` (status
        counters are per side, and a side's receive counters belong to the direction coming
        in)."""
        by_side = {tuple(link["link"]): link for link in self.links}
        rx_names = ("aligned", "align_losses", "header_errors", "crc_errors", "sequence_errors")
        out = []
        for (col, row, side), tx in by_side.items():
            direction = Direction[side]
            dc, dr = direction.step
            peer = (col + dc, row + dr, direction.opposite.letter)
            rx = by_side.get(peer, {})
            entry = {"from": (col, row, side), "to": peer}
            entry.update({k: v for k, v in tx.items() if k not in rx_names and k != "link"})
            entry.update({k: rx.get(k, 0) for k in rx_names})
            out.append(entry)
        return out

    @property
    def stalled_at(self):
        """The subcycle at which the mesh stopped making progress (the steps completed before
        the stall), or None if it did not stall."""
        return len(self.step_cycles) if self.stalled else None

    def verdict(self):
        """One phrase for the outcome against the reference emulator of the whole grid: "the
        mesh matched ...", "the mesh did not match ..." or, for a stall, "the mesh stopped
        making progress at subcycle N" (a stall is not a mismatch)."""
        if self.stalled:
            return (f"the mesh stopped making progress at subcycle {self.stalled_at} of "
                    f"{self.steps}")
        return (f"the mesh {'matched' if self.survived else 'did not match'} the reference "
                "emulator of the whole grid")

    @property
    def injected(self):
        """Faults the fault models injected, over every link (a dict)."""
        totals = self.totals()
        return {name: totals.get(name, 0) for name in FAULT_COUNTERS}

    @property
    def cycles_per_subcycle(self):
        """Mean cycles of tile 0's clock per subcycle."""
        return sum(self.step_cycles) / max(len(self.step_cycles), 1)

    def summary(self, limit=10):
        head = (f"{self.name}: {self.simulator}, {self.design}, faults {self.faults}, "
                f"{self.steps} steps: ")
        totals = self.totals()
        counters = ", ".join(f"{k} {v}" for k, v in totals.items() if v)
        lines = [head + ("OK" if self.ok else "STALLED" if self.stalled else "FAILED")]
        if self.stalled:
            lines.append(f"  {self.verdict()}: {self.stalled}")
        lines.append(f"  {self.cycles_per_subcycle:.1f} cycles per subcycle; link counters: "
                     f"{counters or 'all zero'}")
        if not self.config_ok:
            lines.append("  a tile did not accept its configuration")
        if self.readback_errors:
            lines.append(f"  {len(self.readback_errors)} frame(s) read back wrong")
        if self.state_mismatch_count:
            first = self.state_mismatches[0]
            lines.append(f"  {self.state_mismatch_count} cell output(s) differ from the "
                         f"emulator's state; first: step {first[0]}, cell ({first[3]}, "
                         f"{first[4]}) output {Direction(first[5]).letter} in chip ({first[1]}, "
                         f"{first[2]}): expected {first[6]}, got {first[7]}")
        lines += mismatch_lines(self.mismatches, self.emulator_mismatches, limit)
        return "\n".join(lines)


def _spec(faults):
    return faults if isinstance(faults, FaultSpec) else FaultSpec.parse(faults or "none")


def run_mesh_cases(cases, shape, *, simulator="icarus", lanes=1, ddr=False, storage="ff",
                   faults=None, case_faults=None, waves=None, keep=False, quiet=False,
                   stall_cycles=20000, line_delay=0, replay_depth=4, timeout=256,
                   input_latency=1, output_latency=1, fixed=False):
    """Run :class:`~bitgrid.sim.api.SimCase` s (global configurations, see
    :func:`~bitgrid.sim.api.make_case`) on a simulated mesh of ``shape`` chips.

    :param fixed: compile each case's configuration into the gateware, every tile its slice
        (present from power-up, not loaded, still read back through each tile's port; one
        build and one simulator process per configuration), as :func:`~bitgrid.sim.api.
        run_cases` ``fixed``: for large programs, whose loads take most of a run.

    :param shape: a :class:`~bitgrid.mesh.MeshShape` or its text (``"2x2"``).
    :param faults: a :class:`~bitgrid.faults.FaultSpec`, its text, or None (no faults; the
        fault models are built in either way so that one build serves every spec).
    :param case_faults: optional list, one fault spec per case, overriding ``faults`` (so that
        one simulator process runs several fault scenarios).
    :param stall_cycles: cycles without progress after which a case is reported as stalled.
    :param line_delay, replay_depth, timeout, input_latency, output_latency: see
        :class:`MeshDesign`.
    :returns: list of :class:`MeshResult`.
    :raises ValueError: for a bad option, a shape the grid does not split into, or a bad
        fault spec (also one with more slips or disconnects than a case has steps,
        :meth:`~bitgrid.faults.FaultSpec.check_run`).
    :raises ToolMissingError, SimulationError: as :func:`bitgrid.sim.api.run_cases`.
    """
    cases = list(cases)
    for case in cases:
        if not isinstance(case, SimCase):
            raise TypeError(f"run_mesh_cases takes SimCase objects (see make_case), not {case!r}")
    check_int(lanes, "lanes", minimum=1, maximum=16)
    check_int(line_delay, "line_delay", minimum=0, maximum=4096)
    for name, value in (("input_latency", input_latency), ("output_latency", output_latency)):
        check_int(value, name, minimum=1, maximum=MAX_LATENCY)
    check_int(stall_cycles, "stall_cycles", minimum=1, maximum=10 ** 9)
    check_bool(ddr, "ddr")
    check_bool(fixed, "fixed")
    if case_faults is not None and len(case_faults) != len(cases):
        raise ValueError(f"case_faults has {len(case_faults)} entries for {len(cases)} cases")
    _check_options(simulator, storage, waves)
    shape = shape if isinstance(shape, MeshShape) else MeshShape.parse(str(shape))
    spec = _spec(faults)
    case_specs = [spec if case_faults is None else _spec(case_faults[i])
                  for i in range(len(cases))]
    for case, case_spec in zip(cases, case_specs):
        case_spec.check_run(max(len(case.inputs), 1))      # slips, disconnects per step
    groups = {}
    for index, case in enumerate(cases):
        design = MeshDesign.for_grid(case.width, case.height, shape, lanes=lanes, ddr=ddr,
                                     storage=storage, line_delay=line_delay,
                                     replay_depth=replay_depth, timeout=timeout,
                                     input_latency=input_latency,
                                     output_latency=output_latency,
                                     init=tuple(case.config.luts.reshape(-1).tolist())
                                     if fixed else None)
        groups.setdefault(design, []).append(index)
    if waves is not None and len(groups) > 1:
        raise ValueError("A waveform file holds one grid size; run the sizes separately")
    results = [None] * len(cases)
    for design, indices in groups.items():
        build = build_mesh(design, simulator=simulator,
                           waves=None if waves is None else backends.wave_format(waves),
                           quiet=quiet)
        job = _mesh_job(design, spec, stall_cycles,
                        [dict(job_case(cases[i]), faults=str(case_specs[i]),
                              **({"fixed": True} if fixed else {})) for i in indices])
        out, seconds = _runner.run_testbench(build, job, waves_path=waves, keep=keep,
                                             quiet=quiet, test_module=TEST_MODULE)
        for i, raw in zip(indices, out["cases"]):
            results[i] = _mesh_result(raw, simulator, design, case_specs[i], build, seconds)
    return results


def _mesh_job(design, spec, stall_cycles, cases):
    """The job of the mesh test bench (:mod:`bitgrid.sim.testbench.mesh`) for ``design``."""
    from bitgrid.hdl.mesh import mesh_links
    shape = design.shape
    return {"format": MESH_JOB_FORMAT, "cols": shape.cols, "rows": shape.rows,
            "tile_width": design.tile_width, "tile_height": design.tile_height,
            "lanes": design.lanes, "ddr": design.ddr,
            "links": [list(link) for link in mesh_links(shape.cols, shape.rows)],
            "faults": str(spec), "clock_ns": 10, "stall_cycles": stall_cycles, "cases": cases}


def _mesh_result(raw, simulator, design, faults, build, seconds):
    """A :class:`MeshResult` from a case of the test bench's result."""
    return MeshResult(
        name=raw["name"], simulator=simulator, design=design, faults=faults,
        steps=raw["steps"], outputs=[Edges(*o) for o in raw["outputs"]],
        mismatches=[Mismatch(*m) for m in raw["mismatches"]],
        emulator_mismatches=[Mismatch(*m) for m in raw["emulator_mismatches"]],
        state_mismatches=[tuple(m) for m in raw["state_mismatches"]],
        state_mismatch_count=raw["state_mismatch_count"],
        readback_errors=[tuple(r) for r in raw["readback_errors"]],
        config_ok=all(raw["config_valid"]) and not any(raw["config_error"]),
        subcycles=raw["subcycles"], stalled=raw["stalled"], links=raw["links"],
        stalls=raw["stalls"], step_cycles=raw["step_cycles"], run_ns=raw["run_ns"],
        build_seconds=build.seconds, build_cached=build.cached,
        run_seconds=raw["wall_seconds"], process_seconds=seconds)


def run_mesh_case(config, steps, shape, *, expected=None, name="case", **options):
    """One configuration on a simulated mesh; see :func:`run_mesh_cases`."""
    case = make_case(config, steps, expected=expected, name=name)
    return run_mesh_cases([case], shape, **options)[0]


def run_mesh_vector_files(paths, shape, **options):
    """``bitgrid-vectors-v1`` case files on a simulated mesh; every file is loaded and checked
    (including that its grid splits into ``shape``) before anything is built."""
    cases = [_vector_sim_case(load_case(p)) for p in paths]
    shape = shape if isinstance(shape, MeshShape) else MeshShape.parse(str(shape))
    for case in cases:
        shape.tile_size(case.width, case.height)
    return run_mesh_cases(cases, shape, **options)
