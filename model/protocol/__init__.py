"""Wire formats, each defined once, shared by the software model and the gateware.

* :mod:`bitgrid.protocol.host`: the host protocol of ``docs/host-protocol.md`` (UART link
  between a host and a board): framing, CRC, the command table, payload layouts.
* :mod:`bitgrid.protocol.link`: the frames of the inter-chip link layer (SPEC section 8).
* :mod:`bitgrid.protocol.bgcf`: BGCF v1, the original toolchain's runtime protocol over TCP
  (``docs/serve.md``; software only: :mod:`bitgrid.bgcf`).

All are plain Python data (integers, enums, named tuples) so that the Python device model
(:mod:`bitgrid.host`) and the gateware (:mod:`bitgrid.hdl.host`, :mod:`bitgrid.hdl.link.layer`)
are built from the same definitions.
"""
