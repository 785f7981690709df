"""Whole rows of a served program's named output ports (issue 39 item 2; docs/serve.md,
"Rows").

A program served with its port map runs rows as :mod:`bitgrid.evaluate` does: design cycle
``k`` (counted from the reset of APPLY) takes input bit ``i`` during subcycle
``k * period + skew_i`` and gives output bit ``j`` after subcycle
``k * period + latency + skew_j - 1``. Read at one moment, the lanes of an output port hold
bits of several rows (their skews differ), so the server never reads a named port at one
moment: :class:`RowReader` keeps each output bit as it was *after its own subcycle*, row by
row, and a port's value is that of the latest row whose bits have all been kept and whose
input bits were all applied after the inputs last changed (a *whole* row). Until there is
one, the port has no value and :meth:`RowReader.rows` says how many subcycles are missing.

The server (:class:`~bitgrid.bgcf.server.GridService`) tells the reader where each step
must stop (:meth:`RowReader.stops`: only the last ``span + period + 1`` subcycles of a step,
``span`` the skews' spread, so a long step costs a few short ones at its end), hands it the
edge outputs after each (:meth:`RowReader.capture`) and every change of an input port's lanes
(:meth:`RowReader.inputs_changed`).
"""

from bitgrid.protocol.bgcf import RowInfo, Rows

__all__ = ["RowReader"]


class _Port:
    """One output port: its bits ``(j, side, lane, skew)`` and the rows being kept."""

    def __init__(self, port):
        self.port = port
        self.bits = [(j, bit.side, bit.lane, bit.skew) for j, bit in enumerate(port.bits)]
        self.first = min(bit.skew for bit in port.bits)
        self.last = max(bit.skew for bit in port.bits)
        self.full = (1 << port.width) - 1
        self.partial = {}           # row -> [mask of bits kept, value]
        self.whole = None           # (row, value) of the latest whole row


class RowReader:
    """The rows of the output ports of ``ports`` (:class:`~bitgrid.ports.Port` s, those the
    server names) under the timing of ``portmap`` (:class:`~bitgrid.ports.PortMap`)."""

    def __init__(self, portmap, ports):
        self.period, self.latency = portmap.period, portmap.latency
        self.history = portmap.history
        skews = [bit.skew for port in portmap.inputs for bit in port.bits]
        self.input_skew = min(skews, default=0)
        self.input_lanes = [0, 0, 0, 0]
        for port in portmap.inputs:
            for bit in port.bits:
                self.input_lanes[bit.side] |= 1 << bit.lane
        self.outputs = [_Port(port) for port in ports
                        if port.direction == "out" and port.width]
        first = min((p.first for p in self.outputs), default=0)
        last = max((p.last for p in self.outputs), default=0)
        #: Subcycles at the end of a step whose outputs are kept.
        self.tail = last - first + self.period + 1
        self.changed = 0

    def __bool__(self):
        return bool(self.outputs)

    # -- the server's side ---------------------------------------------------------------

    def _due(self, t, skew):
        """The row whose bit of ``skew`` is read after subcycle ``t``, or None."""
        k, offset = divmod(t - (self.latency + skew - 1), self.period)
        return k if offset == 0 and k >= 0 else None

    def stops(self, start, stop):
        """The subcycles in ``start .. stop - 1`` after which the outputs must be kept (the
        ones some output bit is read after, in the last :attr:`tail` of them), sorted."""
        skews = {bit[3] for port in self.outputs for bit in port.bits}
        return [t for t in range(max(start, stop - self.tail), stop)
                if any(self._due(t, skew) is not None for skew in skews)]

    def inputs_changed(self, subcycle, old, new):
        """The inputs ``old`` became ``new`` (:class:`~bitgrid.terms.Edges`) before
        ``subcycle``: rows that took an input bit before it are not whole for the new inputs.
        A change outside the input ports' lanes changes nothing."""
        if any((a ^ b) & mask for a, b, mask in zip(old, new, self.input_lanes)):
            self.changed = subcycle

    def capture(self, t, edges):
        """Keep the output bits read after subcycle ``t`` (``edges``: the edge outputs then)."""
        for port in self.outputs:
            for j, side, lane, skew in port.bits:
                k = self._due(t, skew)
                if k is None:
                    continue
                entry = port.partial.setdefault(k, [0, 0])
                entry[0] |= 1 << j
                entry[1] |= ((edges[side] >> lane) & 1) << j
                if entry[0] == port.full:
                    del port.partial[k]
                    if port.whole is None or k > port.whole[0]:
                        port.whole = (k, entry[1])
            # rows that can no longer fill (their early bits ran in the bulk of a step)
            for k in [k for k in port.partial
                      if k * self.period + self.latency + port.last - 1 < t - self.tail]:
                del port.partial[k]

    # -- the client's side ---------------------------------------------------------------

    def _first_clean(self):
        """The first row whose input bits were all applied after the last change, and those
        of the ``history`` rows before it (the rows its outputs depend on through registers
        retimed into the port timing: :attr:`bitgrid.ports.PortMap.history`)."""
        return max(0, -(-(self.changed - self.input_skew) // self.period) + self.history)

    def value(self, port, subcycle):
        """``(row, value)`` of ``port``'s (a :class:`_Port`) whole row, or None."""
        if port.whole is not None and port.whole[0] >= self._first_clean():
            return port.whole
        return None

    def values(self, subcycle):
        """``{port name: (row, value) or None}`` for every output port."""
        return {port.port.name: self.value(port, subcycle) for port in self.outputs}

    def rows(self, subcycle):
        """The :class:`~bitgrid.protocol.bgcf.Rows` of ROWS at counter ``subcycle``."""
        infos = []
        for port in self.outputs:
            whole = self.value(port, subcycle)
            ready = (self._first_clean() * self.period + self.latency + port.last)
            infos.append(RowInfo(port.port.name, port.first, port.last, whole is not None,
                                 whole[0] if whole else 0,
                                 0 if whole else max(0, ready - subcycle)))
        skew = max(-(1 << 15), min((1 << 15) - 1, self.input_skew))     # an i16 on the wire
        return Rows(self.period, self.latency, skew, subcycle, self.changed, infos)
