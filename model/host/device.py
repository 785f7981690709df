"""The Python model of the gateware's protocol engine, driven by the command table
(:data:`bitgrid.protocol.host.COMMANDS`): what the device end of ``docs/host-protocol.md`` answers
to every byte it receives, good or bad.

The gateware tests (``tests/test_host_gateware.py``) require
:class:`bitgrid.hdl.host.ProtocolEngine` to answer byte for byte as :class:`DeviceModel` does,
and the model itself is checked against the reference emulator (``tests/test_host.py``).
"""

import zlib

from bitgrid.checks import check_choice
from bitgrid.config import Configuration, frame_record
from bitgrid.emulator import Emulator
from bitgrid.protocol.host import (
    COUNTER_MAX, FRAMING_RESPONSE, LOAD_REJECTS, STATUS_COUNTERS, STORAGE_CODES, Answer, Check,
    DeviceStatus, Effect, Status, answer_code, check_protocol_size, command_spec,
    decode_frame, device_identity, encode_frame, max_body, pack_outputs, unpack_edges)
from bitgrid.terms import ENGINES, Edges

__all__ = ["DeviceModel"]


def _number(data):
    return int.from_bytes(data, "little")


class DeviceModel:
    """A Python model of the gateware's protocol engine (``bitgrid.hdl.host.ProtocolEngine``)
    holding a reference emulator as its grid. :meth:`feed` takes the bytes the host sends and
    returns the bytes the device answers.

    Each good request is handled as the module docstring of :mod:`bitgrid.protocol.host` says:
    replay, then the payload length against :meth:`CommandSpec.lengths`, then the
    :class:`~bitgrid.protocol.host.Check` s of the command in order, then its
    :class:`~bitgrid.protocol.host.Effect`, then its :class:`~bitgrid.protocol.host.Answer`.

    :param width, height: grid size in cells (even, and small enough for the protocol's frames).
    :param storage: storage name reported by IDENTIFY (a key of ``STORAGE_CODES``).
    :param init: power-up :class:`~bitgrid.Configuration` (default all zero).
    :param engine: grid engine reported by IDENTIFY (``"direct"`` or ``"multiplexed"``).
    :param staged: False models the gateware's unstaged loads (``ProtocolEngine(staged=False)``):
        LOAD_BEGIN stops the grid, every LOAD_CHUNK writes its frame into the running
        configuration, a rejected LOAD_APPLY leaves the grid stopped.
    :raises ValueError: for a bad size or storage name.
    """

    #: The STATUS counters, in wire order.
    COUNTERS = STATUS_COUNTERS

    def __init__(self, width, height, *, storage="ff", init=None, engine="direct",
                 staged=True):
        self.width, self.height = check_protocol_size(width, height)
        self.storage = check_choice(storage, "Storage", tuple(STORAGE_CODES))
        self.engine = check_choice(engine, "Engine", ENGINES)
        self.staged_loads = bool(staged)
        self.max_body = max_body(width, height)
        self.emulator = Emulator(init or Configuration(width, height))
        self.valid = True
        self.loading = False
        self.load_failed = False
        self.staged = []
        self.staged_crc = 0
        self.edges_in = Edges()
        self.counters = dict.fromkeys(self.COUNTERS, 0)
        self.last = None              # (command, sequence) of the last executed request
        self.last_status = Status.OK
        self._buffer = bytearray()
        self._checks = {
            Check.LOADING: lambda fields: self.loading,
            Check.ADDRESS: lambda fields: (_number(fields["row"]) < self.height
                                           and _number(fields["address"]) < 16),
            Check.IN_ORDER: lambda fields: (16 * _number(fields["row"])
                                            + _number(fields["address"]) == len(self.staged)),
            Check.COMPLETE: lambda fields: len(self.staged) == 16 * self.height,
            Check.CONFIG_CRC: lambda fields: _number(fields["crc"]) == self.staged_crc,
            Check.VALID: lambda fields: self.valid,
        }
        self._effects = {
            Effect.NONE: lambda fields: None,
            Effect.BEGIN_LOAD: self._begin_load,
            Effect.STAGE: self._stage,
            Effect.APPLY: self._apply,
            Effect.STEP: self._step,
            Effect.SET_EDGES: self._set_edges,
            Effect.RESET: lambda fields: self.emulator.reset(),
        }
        self._answers = {
            Answer.EMPTY: lambda fields: b"",
            Answer.IDENTITY: lambda fields: device_identity(
                self.width, self.height, self.storage, self.engine,
                staged=self.staged_loads).to_bytes(),
            Answer.OUTPUTS: lambda fields: pack_outputs(
                self.emulator.subcycle, self.emulator.edge_outputs(), self.width, self.height),
            Answer.STATUS: lambda fields: self.device_status().to_bytes(),
            Answer.RECORD: self._record,
        }

    @property
    def config(self):
        """The running configuration."""
        return self.emulator.config

    def device_status(self):
        """:class:`~bitgrid.protocol.host.DeviceStatus` now (what STATUS answers)."""
        return DeviceStatus(self.valid, self.loading, self.load_failed, self.emulator.subcycle,
                            len(self.staged), *(self.counters[k] for k in self.COUNTERS))

    def _count(self, name):
        self.counters[name] = min(self.counters[name] + 1, COUNTER_MAX)

    def feed(self, data):
        """Process received bytes; return the bytes sent back (zero or more whole frames)."""
        out = bytearray()
        for byte in bytes(data):
            if byte:
                self._buffer.append(byte)
                continue
            encoded, self._buffer = bytes(self._buffer), bytearray()
            if encoded:                      # an empty frame is a resynchronising delimiter
                out += self._frame(encoded)
        return bytes(out)

    def _frame(self, encoded):
        status, body = decode_frame(encoded, self.max_body)
        if status != Status.OK:
            self._count("crc_errors" if status == Status.BAD_CRC else "framing_errors")
            return encode_frame(bytes([FRAMING_RESPONSE, 0, status]))
        self._count("frames_ok")
        command, sequence, payload = body[0], body[1], body[2:]
        spec = command_spec(command)
        if self.last == (command, sequence):
            self._count("replays")
            status = self.last_status
        else:
            status = self._execute(spec, payload)
            self.last, self.last_status = (command, sequence), status
            if status != Status.OK:
                self._count("command_errors")
                if status in LOAD_REJECTS:
                    self._count("load_rejects")
        response = bytes([answer_code(command), sequence, status])
        if status == Status.OK:
            # From the state after the request, as the gateware assembles it.
            response += self._answers[spec.answer](spec.fields(payload, self.width,
                                                               self.height))
        return encode_frame(response)

    def _execute(self, spec, payload):
        """The status of one new request, with its side effects."""
        if spec is None:
            return Status.UNKNOWN_COMMAND
        if len(payload) not in spec.lengths(self.width, self.height):
            return Status.BAD_LENGTH
        fields = spec.fields(payload, self.width, self.height)
        for check in spec.checks:
            if not self._checks[check](fields):
                if check.ends_load:
                    self.loading, self.load_failed = False, True
                return check.status
        self._effects[spec.effect](fields)
        return Status.OK

    # --- Effects -------------------------------------------------------------------------------

    def _begin_load(self, fields):
        self.loading, self.staged, self.staged_crc = True, [], 0
        if not self.staged_loads:
            self.valid = False                  # the grid stops at once

    def _stage(self, fields):
        self.staged.append(_number(fields["frame"]))
        if not self.staged_loads:               # straight into the running configuration
            self.emulator.config.set_frame(_number(fields["row"]), _number(fields["address"]),
                                           _number(fields["frame"]))
        self.staged_crc = zlib.crc32(fields["row"] + fields["address"] + fields["frame"],
                                     self.staged_crc)

    def _apply(self, fields):
        config = Configuration(self.width, self.height)
        for index, frame in enumerate(self.staged):
            config.set_frame(index // 16, index % 16, frame)
        self.emulator.load(config)
        self.emulator.reset()
        self.loading, self.valid, self.load_failed = False, True, False

    def _step(self, fields):
        if "edges" in fields:
            self._set_edges(fields)
        for _ in range(_number(fields["n"])):
            self.emulator.step(self.edges_in)

    def _set_edges(self, fields):
        self.edges_in = unpack_edges(fields["edges"], self.width, self.height)

    def _record(self, fields):
        row, address = _number(fields["row"]), _number(fields["address"])
        return frame_record(row, address, self.config.frame(row, address), self.width)
