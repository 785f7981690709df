"""The cocotb test benches, loaded inside the simulator (the runner passes one of them as
``test_module``):

* :mod:`bitgrid.sim.testbench.base`: what they share (:class:`Testbench`: clock, reset, edge
  buses; :class:`ConfigPort`; X-aware reads; job cases and the result file);
* :mod:`bitgrid.sim.testbench.grid`: a grid (``bitgrid_grid``), :class:`GridTestbench`;
* :mod:`bitgrid.sim.testbench.host`: the host controller (``bitgrid_host``) behind a bit-level
  UART model, driven by the host runtime;
* :mod:`bitgrid.sim.testbench.mesh`: a mesh of tiles (``bitgrid_mesh``),
  :class:`MeshTestbench`.

The job and result files are described in :mod:`bitgrid.sim.jobs`. This package itself holds no
cocotb test (so that naming it as a test module finds none); it re-exports the shared pieces.
"""

from .base import (ConfigPort, Results, Testbench, TestbenchError, case_config, case_edges,
                   compare_outputs, edge_ports, read_word)

__all__ = ["ConfigPort", "Results", "Testbench", "TestbenchError", "case_config", "case_edges",
           "compare_outputs", "edge_ports", "read_word"]
