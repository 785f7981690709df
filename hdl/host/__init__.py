"""The host link gateware: the protocol engine of ``docs/host-protocol.md`` behind a UART,
driving a :class:`~bitgrid.hdl.grid.Grid` (configuration port, step, edge buses).

* :mod:`.uart`: :class:`UARTReceiver`, :class:`UARTTransmitter` (8N1, one bit every
  ``divisor`` clock cycles).
* :mod:`.framing`: :class:`FrameReceiver` (COBS decoding and the CRC check into a frame buffer)
  and :class:`FrameSender` (CRC, COBS encoding into an answer buffer), from the stream stages
  of :mod:`bitgrid.hdl.stream`.
* :mod:`.engine`: :class:`ProtocolEngine`, whose dispatch is generated from the command table
  :data:`bitgrid.protocol.host.COMMANDS`; its reference is the Python model
  :class:`bitgrid.host.DeviceModel`: for the same bytes in, the same bytes out.
* :mod:`.controller`: :class:`HostController` (UART + engine + grid, what a board top
  instantiates) and :func:`attach_grid`.
"""

from .controller import HostController, attach_grid
from .engine import ProtocolEngine
from .framing import FrameReceiver, FrameSender
from .uart import UARTReceiver, UARTTransmitter

__all__ = ["attach_grid", "UARTReceiver", "UARTTransmitter", "FrameReceiver", "FrameSender",
           "ProtocolEngine", "HostController"]
