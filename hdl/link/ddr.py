"""Line I/O buffers of the link's physical layer (:mod:`bitgrid.hdl.link.phy`): SDR and DDR
output and input registers with a cycle-exact simulation model.

Amaranth's :class:`amaranth.lib.io.DDRBuffer` cannot be simulated (it raises for a
:class:`~amaranth.lib.io.SimulationPort`), and plain Verilog export has no vendor primitive to
map it to. :class:`OutputBuffer` and :class:`InputBuffer` therefore elaborate to

* :class:`amaranth.lib.io.DDRBuffer` (``ddr=True``) or :class:`amaranth.lib.io.FFBuffer`
  (``ddr=False``) on ``port`` when elaborated for a real platform, and to
* a model made of ordinary flip-flops, driving or reading the member :attr:`pins`, when the
  platform is ``None`` (simulation, :func:`amaranth.back.verilog.convert`).

The model has the latency of the primitive as documented in ``amaranth/lib/io.py``: the
output latency *t1* (from the cycle ``o`` is captured to the cycle its rising-edge bit is on the
pins, plus one) and the input latency *t2* (from the cycle the rising-edge bit is on the pins to
the cycle it shows on ``i``) are the ``latency`` parameter of :class:`OutputBuffer` and
:class:`InputBuffer` (default 1, the iCE40 behaviour; Glasgow's ``SimulatableDDRBuffer`` in
``software/glasgow/gateware/iostream.py`` models the same). The docs warn that vendor
primitives may add pipeline registers and that the latency cannot be queried: on ECP5 the
``ODDRX1F`` output takes *t1* = 3 (two more register stages, ``amaranth/vendor/_lattice.py``
delays its output enable by 2 to match; amaranth issue 538: *t1* = 3 on Lattice platforms other
than iCE40, 1 elsewhere, *t2* = 1 everywhere). The model adds ``latency - 1`` registers before
its output register (output) or after its input registers (input), so that a simulation can run
at the latencies of the target; :attr:`latency` is what the physical layer reads
(:attr:`bitgrid.hdl.link.phy.LinkPhy.extra_latency`). On a real platform the primitive is used
as it is: ``latency`` must then state its latency (the buffer adds no registers there).

The diagrams show ``latency`` = 1; each further cycle of latency delays ``pins`` (output) or
``i`` (input) by one more cycle.

DDR output (``o`` set during cycle 1, captured by the rising edge that starts cycle 2)::

    clk    __/‾‾\\__/‾‾\\__/‾‾\\__/‾‾\\__
    o[0]   ==X A   X C   X=====X=====
    o[1]   ==X B   X D   X=====X=====
    pins   ========X A X B X C X D X==     (A from the rising edge, B from the falling edge)
    cycle     1     2     3     4

DDR input (``^`` marks the sampling edges: A is on the pins at the rising edge that starts
cycle 2, B at the falling edge in cycle 2; both appear together on ``i`` after the next rising
edge, so the input latency *t2* is one cycle)::

    clk    __/‾‾\\__/‾‾\\__/‾‾\\__/‾‾\\__
    edge     ^  ^  ^  ^  ^  ^  ^  ^
    pins   -----A--B--C--D-----------
    i[0]   ==============X A   X C   X==
    i[1]   ==============X B   X D   X==
    cycle     1     2     3     4

SDR is a single flip-flop each way (:class:`~amaranth.lib.io.FFBuffer`): ``pins`` follows ``o``
one edge later; ``i`` shows the value sampled at a rising edge from that edge on.
"""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Module, Signal
from amaranth.lib import data, io, wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_bool, check_int

__all__ = ["OutputBuffer", "InputBuffer", "MAX_LATENCY"]

#: Largest buffer latency the model accepts, in cycles.
MAX_LATENCY = 8


def _check(width, ddr, domain, latency):
    check_int(width, "width", minimum=1)
    check_bool(ddr, "ddr")
    if not isinstance(domain, str):
        raise TypeError(f"domain must be a domain name, not {domain!r}")
    return check_int(latency, "latency", minimum=1, maximum=MAX_LATENCY)


def _pipeline(m, domain, value, stages, name):
    """``value`` delayed by ``stages`` registers of ``domain``."""
    for stage in range(stages):
        delayed = Signal.like(value, name=f"{name}_{stage}", reset_less=True)
        m.d[domain] += delayed.eq(value)
        value = delayed
    return value


def _negedge(m, domain, name):
    """A local domain clocked by the falling edge of ``domain``."""
    cd = ClockDomain(name, local=True, reset_less=True)
    m.domains += cd
    m.d.comb += cd.clk.eq(~ClockSignal(domain))
    return name


class _Buffer(wiring.Component):
    """What :class:`OutputBuffer` and :class:`InputBuffer` share: the parameters, the members
    (``direction`` ``"o"`` or ``"i"``: the data member, ``pins`` the other way), and the
    lowering to :class:`amaranth.lib.io.DDRBuffer` / :class:`~amaranth.lib.io.FFBuffer` on a
    real platform; :meth:`_model` is the simulation model."""

    direction = None

    def __init__(self, width, *, ddr=False, domain="sync", port=None, latency=1):
        self._latency = _check(width, ddr, domain, latency)
        self._width, self._ddr, self._domain, self._port = width, ddr, domain, port
        shape = data.ArrayLayout(width, 2) if ddr else width
        data_dir, pins_dir = (In, Out) if self.direction == "o" else (Out, In)
        super().__init__({self.direction: data_dir(shape), "pins": pins_dir(width)})

    @property
    def latency(self):
        """*t1* (output) or *t2* (input) in cycles of :attr:`domain`, see the module
        docstring."""
        return self._latency

    @property
    def ddr(self):
        return self._ddr

    @property
    def domain(self):
        return self._domain

    def elaborate(self, platform):
        if platform is not None and self._port is None:
            raise ValueError(f"{type(self).__name__} needs a port on a real platform")
        m = Module()
        if platform is None:
            self._model(m)
            return m
        cls = io.DDRBuffer if self._ddr else io.FFBuffer
        d = self.direction
        m.submodules.buffer = buffer = cls(d, self._port, **{f"{d}_domain": self._domain})
        if d == "o":
            m.d.comb += buffer.o.eq(self.o)
        else:
            m.d.comb += self.i.eq(buffer.i)
        return m


class OutputBuffer(_Buffer):
    """An SDR or DDR output register in ``domain`` (see the module docstring for the timing).

    Parameters
    ----------
    width : int
    ddr : bool
    domain : str
        Clock domain of the register (default ``"sync"``).
    port : :class:`amaranth.lib.io.PortLike` or None
        Pins driven on a real platform; required there. Ignored by the simulation model.
    latency : int
        Output latency *t1* in cycles, 1 to :data:`MAX_LATENCY` (default 1; 3 for an ECP5
        ``ODDRX1F``).

    Members
    -------
    o : In(width) for SDR, In(ArrayLayout(width, 2)) for DDR
        Data for the next cycle; for DDR ``o[0]`` goes out first (from the rising edge).
    pins : Out(width)
        The simulation model's output (stays 0 on a real platform, where ``port`` is used).
    """

    direction = "o"

    def _model(self, m):
        o = _pipeline(m, self._domain, self.o, self._latency - 1, "o_pipe")
        if not self._ddr:
            reg = Signal(self._width, reset_less=True)
            m.d[self._domain] += reg.eq(o)
            m.d.comb += self.pins.eq(reg)
            return
        # Glitch-free two-edge output: pins = pos ^ neg, where the rising-edge register makes
        # the XOR equal o[0] and the falling-edge register then makes it equal o[1].
        neg_domain = _negedge(m, self._domain, "ddr_o_neg")
        pos = Signal(self._width, reset_less=True)
        neg = Signal(self._width, reset_less=True)
        late = Signal(self._width, reset_less=True)
        m.d[self._domain] += [pos.eq(o[0] ^ neg), late.eq(o[1])]
        m.d[neg_domain] += neg.eq(late ^ pos)
        m.d.comb += self.pins.eq(pos ^ neg)


class InputBuffer(_Buffer):
    """An SDR or DDR input register in ``domain`` (see the module docstring for the timing).

    Parameters
    ----------
    width : int
    ddr : bool
    domain : str
        Clock domain of the register (default ``"sync"``).
    port : :class:`amaranth.lib.io.PortLike` or None
        Pins read on a real platform; required there. Ignored by the simulation model.
    latency : int
        Input latency *t2* in cycles, 1 to :data:`MAX_LATENCY` (default 1).

    Members
    -------
    pins : In(width)
        The simulation model's input (unused on a real platform).
    i : Out(width) for SDR, Out(ArrayLayout(width, 2)) for DDR
        For DDR ``i[0]`` is the rising-edge sample, ``i[1]`` the following falling-edge one.
    """

    direction = "i"

    def _model(self, m):
        if not self._ddr:
            reg = Signal(self._width, reset_less=True)
            m.d[self._domain] += reg.eq(self.pins)
            m.d.comb += self.i.eq(_pipeline(m, self._domain, reg, self._latency - 1, "i_pipe"))
            return
        neg_domain = _negedge(m, self._domain, "ddr_i_neg")
        pos = Signal(self._width, reset_less=True)
        neg = Signal(self._width, reset_less=True)
        both = Signal(2 * self._width, reset_less=True)
        m.d[self._domain] += pos.eq(self.pins)
        m.d[neg_domain] += neg.eq(self.pins)
        m.d[self._domain] += both.eq(Cat(pos, neg))
        m.d.comb += self.i.eq(_pipeline(m, self._domain, both, self._latency - 1, "i_pipe"))
