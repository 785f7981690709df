"""The host runtime: one API over every target that runs a BitGrid program.

* Wire format: :mod:`bitgrid.protocol.host` (framing, CRC, the command table, payloads),
  re-exported here.
* :mod:`bitgrid.host.device`: :class:`DeviceModel`, the Python model of the gateware's
  protocol engine, driven by the command table.
* :mod:`bitgrid.host.transports`: :class:`Transport`, :class:`LoopbackTransport` (to a
  :class:`DeviceModel`, with optional fault injection), :class:`SerialTransport` (pyserial).
* :mod:`bitgrid.host.targets`: :class:`Target` (identify, load, step, set_edges, get_edges,
  readback, status, reset), :class:`EmulatorTarget`, :class:`ProtocolTarget`,
  :func:`open_target` (``emu``, ``loopback``, ``sim``, ``serial:PORT``) and
  :func:`run_vectors` (a ``bitgrid-vectors-v1`` case on any target; ``bitgrid run`` maps its
  mismatches to the exit status).
"""

# The wire format, re-exported (FEATURES ... STORAGE_CODES for bitgrid.hdl.host until it imports
# bitgrid.protocol.host itself).
from bitgrid.protocol.host import (  # noqa: F401
    FEATURES, FRAMING_ERRORS, FRAMING_RESPONSE, GATEWARE_VERSION, HOST_CRC, LOAD_REJECTS,
    MAX_BODY_LIMIT, PROTOCOL_VERSION, STORAGE_CODES, Command, DeviceStatus, Feature, Identity,
    LinkError, Status, TargetError, decode_frame, edge_block_size, encode_frame, host_crc,
    max_body, max_payload, pack_edges, unpack_edges)

from .device import DeviceModel
from .targets import (DEFAULT_TIMEOUT, TARGETS, EmulatorTarget, ProtocolTarget, Target,
                      open_target, run_vectors)
from .transports import LoopbackTransport, SerialTransport, Transport

#: Old names of :data:`bitgrid.protocol.host.HOST_CRC` and :func:`~bitgrid.protocol.host.host_crc`
#: (kept until every user imports the new ones).
LINK_CRC = HOST_CRC
link_crc = host_crc

__all__ = ["LINK_CRC", "HOST_CRC", "PROTOCOL_VERSION", "GATEWARE_VERSION", "Command", "Status",
           "Feature", "FRAMING_ERRORS", "link_crc", "host_crc", "encode_frame", "decode_frame",
           "edge_block_size", "pack_edges", "unpack_edges", "max_payload", "max_body",
           "Identity", "DeviceStatus", "LinkError", "TargetError", "DeviceModel", "Transport",
           "LoopbackTransport", "SerialTransport", "Target", "EmulatorTarget", "ProtocolTarget",
           "TARGETS", "DEFAULT_TIMEOUT", "open_target", "run_vectors"]
