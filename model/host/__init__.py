"""The host runtime: one API over every target that runs a BitGrid program.

* Wire format: :mod:`bitgrid.protocol.host` (framing, CRC, the command table, payloads),
  re-exported here.
* :mod:`bitgrid.host.device`: :class:`DeviceModel`, the Python model of the gateware's
  protocol engine, driven by the command table.
* :mod:`bitgrid.host.transports`: :class:`Transport`, :class:`LoopbackTransport` (to a
  :class:`DeviceModel`, with optional fault injection such as :class:`LineNoise`),
  :class:`SerialTransport` (pyserial).
* :mod:`bitgrid.host.targets`: :class:`Target` (identify, load, step, set_edges, get_edges,
  readback, status, reset), :class:`EmulatorTarget`, :class:`ProtocolTarget`,
  :func:`open_target` (``emu``, ``fast``, ``mesh:COLSxROWS``, ``loopback``, ``sim``,
  ``serial:PORT``) and
  :func:`run_vectors` (a ``bitgrid-vectors-v1`` case on any target; ``bitgrid run`` maps its
  mismatches to the exit status).
"""

# The wire format, re-exported: a host program needs only ``bitgrid.host``.
from bitgrid.protocol.host import (
    FEATURES, FRAMING_ERRORS, GATEWARE_VERSION, HOST_CRC, PROTOCOL_VERSION, Command, DeviceStatus, Feature,
    Identity, LinkError, NoAnswerError, Status, TargetError, answer_length, decode_frame,
    edge_block_size, encode_frame, host_crc, max_body, max_payload, pack_edges, unpack_edges)

from .device import DeviceModel
from .targets import (DEFAULT_RETRIES, DEFAULT_TIMEOUT, TARGETS, EmulatorTarget, ProtocolTarget,
                      Target, open_target, run_vectors)
from .transports import LineNoise, LoopbackTransport, SerialTransport, Transport

__all__ = ["HOST_CRC", "PROTOCOL_VERSION", "GATEWARE_VERSION", "Command", "Status",
           "Feature", "FEATURES", "FRAMING_ERRORS", "host_crc", "encode_frame", "decode_frame",
           "edge_block_size", "pack_edges", "unpack_edges", "max_payload", "max_body",
           "answer_length", "Identity", "DeviceStatus", "LinkError", "NoAnswerError",
           "TargetError", "DeviceModel", "Transport", "LoopbackTransport", "LineNoise",
           "SerialTransport", "Target", "EmulatorTarget", "ProtocolTarget", "TARGETS",
           "DEFAULT_TIMEOUT", "DEFAULT_RETRIES", "open_target", "run_vectors"]
