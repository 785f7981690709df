"""cocotb test bench that puts the host controller (``bitgrid_host``) on a socket: the simulated
board of :func:`bitgrid.sim.host_link.open_sim_target` (``open_target("sim")``).

:func:`serve_host_link` connects to the Unix-domain socket named by the job (format
``bitgrid-host-job-v1`` with a ``socket`` entry and no cases), then serves the host's messages
(:mod:`bitgrid.sim.host_link`) one at a time: a ``WRITE`` goes onto ``rx`` through the bit-level
:class:`~bitgrid.sim.testbench.host.UartModel`, a ``READ`` runs the simulation until the controller
has sent a frame delimiter on ``tx`` or the timeout passed. The simulation does not advance
while the host thinks, so the host's timeouts are simulated time. It ends when the host sends
``QUIT`` or closes the socket, and writes a complete, empty result
(``bitgrid-host-result-v1``).
"""

import socket
import struct
import time

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import RisingEdge

from .host import HOST_JOB_FORMAT, HOST_RESULT_FORMAT
from .testbench.host import UartModel
from .host_link import QUIT, READ, WRITE, receive_message, send_answer
from .runner import read_job, write_result

__all__ = ["serve_host_link"]


def _seconds():
    return get_sim_time("ns") * 1e-9


@cocotb.test()
async def serve_host_link(dut):
    """Serve the host's messages on the socket named by ``$BITGRID_SIM_JOB``."""
    job = read_job(HOST_JOB_FORMAT)
    period = job.get("clock_ns", 10)
    uart = UartModel(dut, job["divisor"] * period)
    dut.rst.value = 1
    dut.clk.value = 0
    cocotb.start_soon(Clock(dut.clk, period, unit="ns").start(start_high=False))
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    await RisingEdge(dut.clk)
    uart.start()
    out = {"format": HOST_RESULT_FORMAT, "complete": False, "failed": False, "error": None,
           "cases": [], "writes": 0}
    start = time.monotonic()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(job["socket"])
    try:
        while True:
            # Blocking: the simulation stands still until the host's next message.
            op, data = receive_message(sock)
            if op is None or op == QUIT:
                break
            if op == WRITE:
                out["writes"] += 1
                await uart.send(data)
                send_answer(sock, _seconds())
            elif op == READ:
                timeout, = struct.unpack("<d", data)
                received = await uart.receive(max(1, int(timeout * 1e9)))
                send_answer(sock, _seconds(), received)
            else:
                raise AssertionError(f"unknown message {op!r} from the host")
    except BaseException as error:
        out["failed"] = True
        out["error"] = {"kind": type(error).__name__, "message": str(error)}
        raise
    finally:
        sock.close()
        out["complete"] = True
        out["uart_framing_errors"] = uart.framing_errors
        out["wall_seconds"] = time.monotonic() - start
        out["sim_time_ns"] = get_sim_time("ns")
        write_result(job["result"], out)
