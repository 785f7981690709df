"""cocotb test bench of the host controller (``bitgrid_host``, see
:func:`bitgrid.hdl.verilog.host_verilog`): the host runtime's :class:`~bitgrid.host.ProtocolTarget`
talks to the simulated gateware over its UART pins, so the code path is the one of a real serial
port (COBS frames, link CRC, retransmission), only the transport differs.

* :class:`UartModel`: a bit-level 8N1 driver of ``rx`` and monitor of ``tx`` (``divisor`` clock
  cycles per bit). Python calls are what a simulated link costs, so the driver waits one
  :class:`~cocotb.triggers.Timer` per run of equal bits and the monitor decodes bytes from the
  times of the line's edges: never one call per clock cycle, nor per bit.
* :class:`SimUartTransport`: a :class:`~bitgrid.host.Transport` whose ``write``/``read`` run the
  UART model's coroutines from the host session's thread (:func:`cocotb.task.resume`), with an
  optional fault injector on the bytes sent (as :class:`~bitgrid.host.LoopbackTransport`).
  Its :meth:`~SimUartTransport.clock` is the simulation time, so the ProtocolTarget's timeouts
  count simulated time.
* :func:`run_host_job`: the cocotb test. The host session (a blocking function) runs in a
  :func:`cocotb.task.bridge` thread: for each case of the job (``$BITGRID_SIM_JOB``, format
  ``bitgrid-host-job-v1``) it loads the configuration through the protocol, optionally reads it
  back, runs one STEP per input and compares the outputs with the expected ones; results go to
  the job's ``result`` file (``bitgrid-host-result-v1``), written after every case.
"""

import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.task import bridge, resume
from cocotb.triggers import Event, First, Timer

from bitgrid.host import LinkError, ProtocolTarget, TargetError, Transport
from bitgrid.terms import Edges
from bitgrid.vectors import compare_step

from .. import jobs
from .base import Results, Testbench, case_config

__all__ = ["HostTestbench", "UartModel", "SimUartTransport", "corrupter", "run_host_job"]


class HostTestbench(Testbench):
    """Drives a ``bitgrid_host`` top: its clock, reset and, through :attr:`uart` (a
    :class:`UartModel` of ``divisor`` clock cycles per bit), its ``rx`` and ``tx`` pins."""

    def __init__(self, dut, divisor, *, period_ns=10):
        super().__init__(dut, period_ns=period_ns, edges=False)
        self.uart = UartModel(dut, divisor * period_ns)

    def idle(self):
        self.dut.rx.value = 1                   # the UART line idles high

    async def start_uart(self):
        """Reset the controller (three cycles) and start the UART monitor."""
        await self.reset(cycles=3)
        self.uart.start()


class UartModel:
    """8N1 UART on the ``rx`` (driven) and ``tx`` (monitored) pins of ``dut``, one bit every
    ``bit_ns`` nanoseconds."""

    def __init__(self, dut, bit_ns):
        self.dut = dut
        self.bit_ns = bit_ns
        self.received = bytearray()
        self.framing_errors = 0
        self._arrived = Event()
        dut.rx.value = 1
        self._monitor = None

    def start(self):
        self._monitor = cocotb.start_soon(self._watch())

    async def send(self, data):
        """Send ``data`` back to back (start bit, 8 data bits LSB first, stop bit)."""
        rx = self.dut.rx
        levels = [level for byte in bytes(data)
                  for level in (0, *((byte >> i) & 1 for i in range(8)), 1)]
        # One Timer per run of equal bits, not per bit (the Python calls are what costs).
        start = 0
        while start < len(levels):
            end = start + 1
            while end < len(levels) and levels[end] == levels[start]:
                end += 1
            rx.value = levels[start]
            await Timer(self.bit_ns * (end - start), "ns")
            start = end

    # The monitor decodes ``tx`` from the times of its edges (one Python call per edge, not
    # one per bit): each bit is sampled, in effect, at its middle, from the level of the line
    # between the two edges around that time.

    def _level(self):
        value = self.dut.tx.value
        return int(value) & 1 if value.is_resolvable else 1

    def _decode(self, level, begin, end):
        """The line was at ``level`` from ``begin`` to ``end`` (ns); decode the bits whose
        middle lies before ``end``."""
        bit = self.bit_ns
        if self._t0 is None:
            if level == 1:
                self._armed = True
            if level == 1 or not self._armed:
                return
            self._t0, self._k, self._byte = begin, 0, 0      # a falling edge: start bit
        while self._k < 10 and self._t0 + (self._k + 0.5) * bit < end:
            if 1 <= self._k <= 8:
                self._byte |= level << (self._k - 1)
            elif self._k == 0 and level:
                self._t0 = None                            # a glitch, not a start bit
                return
            self._k += 1
        if self._k == 10:
            self._finish(level)

    def _finish(self, stop):
        if stop:
            self.received.append(self._byte)
            self._arrived.set()
        else:
            self.framing_errors += 1
            self._armed = False                            # wait for the line to go high
        self._t0 = None

    async def _watch(self):
        tx = self.dut.tx
        self._t0, self._armed = None, True
        self._line, self._since = self._level(), get_sim_time("ns")
        while True:
            await tx.value_change
            now, level = get_sim_time("ns"), self._level()
            self._decode(self._line, self._since, now)
            self._line, self._since = level, now
            # Only the stop bit is left and the line rose: the transmitter (our gateware) holds
            # a stop bit for a whole bit, so the byte is complete now (a frame's closing 0x00
            # is seen at once, without waiting for the next edge).
            if self._t0 is not None and level == 1 and self._k == 9:
                self._finish(1)

    def _flush(self):
        now = get_sim_time("ns")
        self._decode(self._line, self._since, now)

    async def receive(self, timeout_ns):
        """Wait until a frame delimiter (0x00) was received or ``timeout_ns`` passed; return (and
        forget) every byte received so far."""
        deadline = get_sim_time("ns") + timeout_ns
        while 0 not in self.received:
            remaining = deadline - get_sim_time("ns")
            if remaining <= 0:
                break
            self._arrived.clear()
            await First(self._arrived.wait(), Timer(remaining, "ns", round_mode="ceil"))
        self._flush()
        data, self.received = bytes(self.received), bytearray()
        return data


class SimUartTransport(Transport):
    """A :class:`~bitgrid.host.Transport` to the simulated UART; to be used from a
    :func:`cocotb.task.bridge` thread.

    :param to_device: fault injector ``f(bytes) -> bytes`` applied to each write.
    """

    name = "simulated UART"

    def __init__(self, uart, *, to_device=None):
        self.uart = uart
        self._to_device = to_device or (lambda data: data)
        self._now = get_sim_time("ns") * 1e-9
        self.writes = 0

    def clock(self):
        """Simulation time in seconds, as of the last write or read."""
        return self._now

    async def _send(self, data):
        await self.uart.send(data)
        self._now = get_sim_time("ns") * 1e-9

    async def _receive(self, timeout_ns):
        data = await self.uart.receive(timeout_ns)
        self._now = get_sim_time("ns") * 1e-9
        return data

    def write(self, data):
        data = self._to_device(bytes(data))
        self.writes += 1
        resume(self._send)(data)

    def read(self, timeout):
        return resume(self._receive)(max(1, int(timeout * 1e9)))


def corrupter(writes):
    """A fault injector that flips one bit in the middle byte of the writes whose index (from 0,
    the first write being the ProtocolTarget's resynchronising delimiter) is in ``writes``;
    the byte never becomes a delimiter. The index list records which writes it corrupted."""
    wanted, count, done = set(writes), [0], []

    def inject(data):
        index = count[0]
        count[0] += 1
        if index in wanted and len(data) > 2:
            data = bytearray(data)
            middle = (len(data) - 1) // 2
            data[middle] ^= 0x10 if data[middle] != 0x10 else 0x01
            done.append(index)
            data = bytes(data)
        return data
    inject.done = done
    return inject


def _status_dict(status):
    return {name: (int(value) if not isinstance(value, bool) else value)
            for name, value in status._asdict().items()}


def _session(job, transport, result, write):
    """The host side (runs in a bridge thread): one ProtocolTarget, every case of the job."""
    width, height = job["width"], job["height"]
    target = ProtocolTarget(transport, timeout=job["timeout_s"], retries=job.get("retries", 4),
                            clock=transport.clock)
    identity = target.identify()
    result["identity"] = {"width": identity.width, "height": identity.height,
                                "storage": identity.storage, "protocol": identity.protocol,
                                "max_payload": identity.max_payload}
    if (identity.width, identity.height) != (width, height):
        raise LinkError(f"the simulated controller reports a {identity.width} x "
                        f"{identity.height} grid, the job is for {width} x {height}")
    for case in job["cases"]:
        start_wall, start_sim = time.monotonic(), transport.clock()
        retrans = target.retransmissions
        config = case_config(case, width, height)
        target.load(config)
        load_wall = time.monotonic()
        readback_errors = None
        if case.get("readback"):
            got = target.readback()
            readback_errors = [[row, address, frame, got.frame(row, address)]
                               for row, address, frame in config.frames()
                               if got.frame(row, address) != frame]
        outputs, mismatches = [], []
        expected = case.get("expected")
        for t, edges in enumerate(case["inputs"]):
            actual = target.step(1, Edges(*edges))
            outputs.append(list(actual))
            if expected is not None:
                mismatches += compare_step(t, Edges(*expected[t]), actual, width, height)
        status = target.status()
        result["cases"].append({
            "name": case.get("name", "case"),
            "steps": len(case["inputs"]),
            "outputs": outputs,
            "mismatches": [list(m) for m in mismatches],
            "readback_errors": readback_errors,
            "retransmissions": target.retransmissions - retrans,
            "status": _status_dict(status),
            "sim_time_ns": (transport.clock() - start_sim) * 1e9,
            "wall_seconds": time.monotonic() - start_wall,
            "load_seconds": load_wall - start_wall,
        })
        write()



@cocotb.test()
async def run_host_job(dut):
    """Run the host session of the job named by ``$BITGRID_SIM_JOB`` against ``bitgrid_host``."""
    job = jobs.read_job("host")
    testbench = HostTestbench(dut, job["divisor"], period_ns=job.get("clock_ns", 10))
    await testbench.start_uart()
    uart = testbench.uart
    inject = corrupter(job.get("corrupt_writes", ()))
    transport = SimUartTransport(uart, to_device=inject)
    results = Results(job, "host", error=None)
    out = results.out
    start = time.monotonic()

    def write():
        out["failed"] = out["error"] is not None or any(
            c["mismatches"] or c["readback_errors"] for c in out["cases"])
        out["corrupted_writes"] = list(inject.done)
        out["uart_framing_errors"] = uart.framing_errors
        out["writes"] = transport.writes
        out["wall_seconds"] = time.monotonic() - start
        results.write()

    try:
        await bridge(_session)(job, transport, out, write)
    except (LinkError, TargetError) as error:
        out["error"] = {"kind": type(error).__name__, "message": str(error),
                        "status": getattr(error, "status", None)}
    out["complete"] = True
    write()
    assert out["error"] is None, out["error"]["message"]
    for case in out["cases"]:
        case["failed"] = bool(case["mismatches"] or case["readback_errors"])
    results.finish()
