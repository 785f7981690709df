"""Helpers shared by the test suite, imported as ``support.<module>`` (``tests/`` is on the
path through ``pythonpath`` in pyproject.toml):

* :mod:`support.conformance`: the shared conformance cases (``../shared/conformance``);
* :mod:`support.gateware`: Amaranth simulation, exact-message ``raises``, Yosys helpers;
* :mod:`support.streams`: driving ``amaranth.lib.stream`` interfaces in simulation;
* :mod:`support.host`: the protocol engine wired to a grid, driven byte by byte.
"""
