"""Byte pipes between the host runtime and a device: :class:`Transport` is the interface,
:class:`LoopbackTransport` reaches a Python :class:`~bitgrid.host.DeviceModel` (with optional
fault injection, such as :class:`LineNoise`), :class:`SerialTransport` a real port through
pyserial. The simulated board's transport is :class:`bitgrid.sim.host_link.SimLinkTransport`.
"""

import abc
import random
import time

from bitgrid.checks import check_int, check_real
from bitgrid.protocol.host import LinkError

__all__ = ["Transport", "LoopbackTransport", "LineNoise", "SerialTransport"]


class Transport(abc.ABC):
    """A byte pipe to a device."""

    name = "transport"

    @abc.abstractmethod
    def write(self, data):
        """Send ``data`` (bytes)."""

    @abc.abstractmethod
    def read(self, timeout):
        """Bytes received, waiting at most ``timeout`` seconds for the first; ``b""`` if none."""

    def clock(self):
        """The time the link's timeouts count, in seconds: :func:`time.monotonic` unless the
        device runs in simulated time (then the simulation's time)."""
        return time.monotonic()

    def close(self):
        pass


class LoopbackTransport(Transport):
    """A transport to a :class:`DeviceModel` (or anything with ``feed(bytes) -> bytes``).

    The device answers within :meth:`write`, so nothing can arrive later: the transport's
    :meth:`clock` is virtual (seconds from 0) and moves on only when :meth:`read` has nothing
    to give, by the whole ``timeout``; a host's timeouts therefore cost no real time and a run
    does not depend on the machine's speed.

    :param device: the device end.
    :param to_device, to_host: optional fault injectors, ``f(bytes) -> bytes``, applied to each
        write and to each answer (flip bits, drop or add bytes; :class:`LineNoise`).
    """

    name = "loopback"

    def __init__(self, device, *, to_device=None, to_host=None):
        self.device = device
        self._to_device = to_device or (lambda data: data)
        self._to_host = to_host or (lambda data: data)
        self._pending = bytearray()
        self._now = 0.0

    def clock(self):
        return self._now

    def write(self, data):
        self._pending += self._to_host(self.device.feed(self._to_device(bytes(data))))

    def read(self, timeout):
        data, self._pending = bytes(self._pending), bytearray()
        if not data:
            self._now += max(timeout, 0)
        return data


class LineNoise:
    """A fault injector for :class:`LoopbackTransport`: each byte that passes is, with
    probability ``rate``, hit by one fault, chosen with equal odds: a bit flipped, the byte
    lost (a frame delimiter too), or a random byte added after it.

    :param rate: faults per byte, 0 to 1.
    :param seed: seed of its :class:`random.Random` (the same seed, the same faults).
    :attr faults: ``{"flip": n, "drop": n, "insert": n}``, the faults injected so far.
    :raises ValueError: for a rate outside 0 to 1.
    """

    KINDS = ("flip", "drop", "insert")

    def __init__(self, rate, *, seed=0):
        self.rate = check_real(rate, "rate", minimum=0, maximum=1)
        self._rng = random.Random(seed)
        self.faults = dict.fromkeys(self.KINDS, 0)

    def __call__(self, data):
        rng, out = self._rng, bytearray()
        for byte in bytes(data):
            if rng.random() >= self.rate:
                out.append(byte)
                continue
            kind = rng.choice(self.KINDS)
            self.faults[kind] += 1
            if kind == "flip":
                out.append(byte ^ 1 << rng.randrange(8))
            elif kind == "insert":
                out += bytes([byte, rng.randrange(256)])
        return bytes(out)


class SerialTransport(Transport):
    """A serial port through pyserial (``serial:/dev/ttyUSB0``).

    :raises LinkError: if the port cannot be opened.
    """

    def __init__(self, port, baudrate=115200):
        import serial
        baudrate = check_int(baudrate, "baudrate", minimum=1)
        self.name = port
        try:
            self._port = serial.Serial(port, baudrate=baudrate, timeout=0)
        except (serial.SerialException, OSError, ValueError) as error:
            raise LinkError(f"cannot open serial port {port}: {error}") from None

    def write(self, data):
        self._port.write(data)
        self._port.flush()

    def read(self, timeout):
        self._port.timeout = timeout
        first = self._port.read(1)
        if not first:
            return b""
        self._port.timeout = 0
        return first + self._port.read(self._port.in_waiting or 0)

    def close(self):
        self._port.close()


# --- Targets -------------------------------------------------------------------------------------
