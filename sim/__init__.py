"""Simulation: cocotb runs of the generated Verilog on Icarus and Verilator.

* :mod:`bitgrid.sim.api`: run configurations and vector cases on a simulator
  (:func:`run_case`, :func:`run_cases`, :func:`run_vector_file` ...), returning
  :class:`SimResult` s;
* :mod:`bitgrid.sim.mesh`: the same for a simulated mesh of chips (``bitgrid sim --mesh``);
* :mod:`bitgrid.sim.host`: the host controller (board top logic) in cocotb behind a UART model,
  driven by :mod:`bitgrid.host` (``bitgrid run --target sim``);
* :mod:`bitgrid.sim.backends`, :mod:`bitgrid.sim.cache`, :mod:`bitgrid.sim.builds`,
  :mod:`bitgrid.sim.runner`: the simulators as data, the build cache (keyed by what went into
  each entry), cached builds, and runs through ``cocotb_tools.runner``;
* :mod:`bitgrid.sim.jobs`: the job and result files between a run and its test bench;
* :mod:`bitgrid.processes` (outside this package: board and ASIC builds use it too):
  simulator child processes that die with their parent (SIGKILL, SIGTERM, Ctrl-C);
* :mod:`bitgrid.sim.waves`: the GTKWave save file written beside a ``--waves`` dump;
* :mod:`bitgrid.sim.testbench`: the cocotb test benches loaded inside the simulator.
"""

from .api import (FrameMismatch, SimCase, SimResult, make_case, run_case, run_cases,
                  run_vector_case, run_vector_file, run_vector_files)
from .runner import (SIMULATORS, STORAGES, LibraryMissingError, SimulationError, available,
                     build, cache_dir, grid_verilog_file, wave_format)

__all__ = ["SIMULATORS", "STORAGES", "FrameMismatch", "LibraryMissingError", "SimCase",
           "SimResult", "SimulationError", "available", "build", "cache_dir",
           "grid_verilog_file", "make_case", "run_case", "run_cases", "run_vector_case",
           "run_vector_file", "run_vector_files", "wave_format"]
