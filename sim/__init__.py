"""Simulation: cocotb runners for Icarus and Verilator, and the generic grid test bench.

* :mod:`bitgrid.sim.api`: run configurations and vector cases on a simulator
  (:func:`run_case`, :func:`run_cases`, :func:`run_vector_file` ...), returning
  :class:`SimResult` s;
* :mod:`bitgrid.sim.runner`: cached builds and runs over ``cocotb_tools.runner``;
* :mod:`bitgrid.sim.testbench`: the cocotb test bench loaded inside the simulator;
* :mod:`bitgrid.sim.host`: the host controller (board top logic) in cocotb behind a UART model,
  driven by :mod:`bitgrid.host` (``bitgrid run --target sim``).
"""

from .api import (FrameMismatch, SimCase, SimResult, make_case, run_case, run_cases,
                  run_vector_case, run_vector_file, run_vector_files)
from .runner import (SIMULATORS, STORAGES, LibraryMissingError, SimulationError, available,
                     build, cache_dir, grid_verilog_file, wave_format)

__all__ = ["SIMULATORS", "STORAGES", "FrameMismatch", "LibraryMissingError", "SimCase",
           "SimResult", "SimulationError", "available", "build", "cache_dir",
           "grid_verilog_file", "make_case", "run_case", "run_cases", "run_vector_case",
           "run_vector_file", "run_vector_files", "wave_format"]
