"""Mesh tiles: a grid with links to its neighbours, and a mesh of them (SPEC section 8).

A :class:`MeshTile` is what one chip of a mesh holds: a :class:`~bitgrid.hdl.grid.Grid`, a link on
each side that has a neighbour (physical layer :class:`~bitgrid.hdl.link.phy.LinkPhy` under a
:class:`~bitgrid.hdl.link.layer.LinkLayer`), and the lockstep barrier that makes the chips of a
mesh compute exactly what one big grid computes. :class:`Mesh` joins ``cols x rows`` tiles into
one simulatable design, each tile in its own clock domain; it is the test harness of the mesh
(``bitgrid sim --mesh``). docs/mesh.md describes the protocol and the measured figures.

The lockstep rule (SPEC section 8). After a tile runs subcycle ``t`` it sends, on every linked
side, one link frame with sequence number ``t mod 256`` holding the lanes of that side whose
boundary cell has parity ``t mod 2`` (the only ones that changed; ``lanes / 2`` bits). The
neighbour's cells that read those lanes have the other parity, so they update in subcycle
``t + 1``. A tile therefore runs subcycle ``t`` only when

* every linked side has delivered the frames ``0 .. t-1`` (frame ``-1`` is the state after reset,
  all zero), and
* the frames of its own subcycle ``t - 1`` have been handed to every link layer (which refuses a
  frame while its replay buffer is full: that is the credit, and how a slow neighbour stalls a
  fast one).

Neighbours therefore never drift more than one subcycle apart, and a frame that arrives early
(from a neighbour already one subcycle ahead) only updates lanes that the waiting tile's next
subcycle does not read, so frames are applied as they arrive. Frames are delivered exactly once
and in order by the link layer or not at all; the barrier turns every link fault into a delay.
"""

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, DomainRenamer, Module, Mux,
                          ResetSignal, Signal)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid._overrides import silence_unused
from bitgrid.checks import check_bool, check_int
from bitgrid.config import check_grid_size
from bitgrid.mesh import MeshShape, slice_configuration
from bitgrid.terms import (DIRECTIONS, E, N, S, W, check_storage, lane_parity_offset, parse_side,
                           parse_sides, side_lanes)
from .engines import check_engine, make_grid
from .grid import ConfigSignature, EdgeSignature, Grid, check_cell_form
from .link import FaultControlSignature, LanePinsSignature
from .link.layer import LinkLayer
from .link.phy import LinkPhy, check_line_delay
from .signature import ParametricSignature

__all__ = ["LinkStatusSignature", "TileLinkSignature", "LinkSetSignature", "MeshTile", "Mesh",
           "fresh_lanes", "tile_links", "mesh_links"]

#: Cycles a tile's link layer holds an owed acknowledgement for the tile's next DATA frame to
#: carry it (:class:`~bitgrid.hdl.link.layer.LinkLayer` ``ack_delay``): the tile steps and
#: hands its frame over 2 to 5 cycles after a neighbour's frame arrives.
ACK_DELAY = 8

#: Counters of :class:`LinkStatusSignature`: (name, width in bits, where it comes from).
_COUNTERS = (
    ("frames_sent", 16, "layer"), ("retransmits", 16, "layer"), ("timeouts", 16, "layer"),
    ("crc_errors", 16, "layer"), ("sequence_errors", 16, "layer"), ("acks_sent", 16, "layer"),
    ("align_losses", 16, "phy"), ("header_errors", 16, "phy"), ("prbs_errors", 32, "phy"),
)
_FAULT_COUNTERS = ("flips", "slips", "drops", "duplicates", "disconnects")


def fresh_lanes(side, lanes, subcycle):
    """Lanes of ``side`` carried by the frame of subcycle ``subcycle`` (a list, lowest first):
    those whose *sending* boundary cell has parity ``subcycle % 2``
    (:func:`bitgrid.terms.lane_parity_offset`). The same lanes, seen from the receiving side
    (the opposite one), are those whose receiving cell has the other parity."""
    first = (subcycle + lane_parity_offset(side)) % 2
    return list(range(first, lanes, 2))


def tile_links(cols, rows, col, row):
    """The linked sides of tile ``(col, row)`` in a ``cols`` x ``rows`` mesh (N, E, S, W
    order): every side that has a neighbour."""
    return "".join(side.letter for side, ok in ((N, row > 0), (E, col < cols - 1),
                                                (S, row < rows - 1), (W, col > 0)) if ok)


def mesh_links(cols, rows):
    """``[(col, row, side), ...]``: every transmit direction of a ``cols`` x ``rows`` mesh, tiles
    in row-major order and each tile's sides in N, E, S, W order (the order of
    :attr:`Mesh.status` and :attr:`Mesh.faults`)."""
    return [(c, r, side) for r in range(rows) for c in range(cols)
            for side in tile_links(cols, rows, c, r)]


class LinkStatusSignature(ParametricSignature):
    """Status of one link side of a :class:`MeshTile`, seen from the tile
    (``Out(LinkStatusSignature(faults))``). Counters are saturating, in the tile's clock domain.

    Members
    -------
    aligned : Out(1)
        The receiver is bit- and lane-aligned.
    credit : Out(8)
        Free slots in the transmit replay buffer.
    frames_sent, retransmits, timeouts, crc_errors, sequence_errors, acks_sent : Out(16)
        From the link layer (:class:`~bitgrid.hdl.link.layer.LinkLayer`).
    align_losses, header_errors : Out(16); prbs_errors : Out(32)
        From the physical layer (:class:`~bitgrid.hdl.link.phy.LinkPhy`).
    flips, slips, drops, duplicates, disconnects : Out(16)
        Only with ``faults=True``: what the fault models of this side's *transmitter* injected.
    """
    keywords = ("faults",)

    def __init__(self, faults=False):
        self.faults = check_bool(faults, "faults")
        members = {"aligned": Out(1), "credit": Out(8)}
        members.update({name: Out(width) for name, width, _ in _COUNTERS})
        if self.faults:
            members.update({name: Out(16) for name in _FAULT_COUNTERS})
        super().__init__(members)


class TileLinkSignature(ParametricSignature):
    """One link side of a :class:`MeshTile`, seen from the tile
    (``Out(TileLinkSignature(lanes, faults=...))``).

    Members
    -------
    pins : Out(LanePinsSignature(lanes))
        The side's lane pins (:class:`~bitgrid.hdl.link.LanePinsSignature`).
    status : Out(LinkStatusSignature(faults))
        The side's link status and counters.
    faults : In(FaultControlSignature(lanes))
        Only with ``faults=True``: fault commands for this side's transmitter.
    """

    parameters = ("lanes",)
    keywords = ("faults",)

    def __init__(self, lanes, *, faults=False):
        self.lanes = check_int(lanes, "lanes", minimum=1)
        self.faults = check_bool(faults, "faults")
        members = {"pins": Out(LanePinsSignature(lanes)),
                   "status": Out(LinkStatusSignature(faults))}
        if self.faults:
            members["faults"] = In(FaultControlSignature(lanes))
        super().__init__(members)


class LinkSetSignature(ParametricSignature):
    """The links of a :class:`MeshTile`, one :class:`TileLinkSignature` member per linked side,
    named by its lower-case letter (``n``, ``e``, ``s``, ``w``; Verilog ``link__e__pins__tx_clk``).
    The interface it creates is also indexed by side: ``tile.link["E"].pins``.

    Parameters
    ----------
    links : str
        The linked sides (:func:`bitgrid.terms.parse_sides`: distinct letters of N, E, S, W).
    lanes, faults
        As :class:`TileLinkSignature`.
    """

    parameters = ("links", "lanes")
    keywords = ("faults",)

    def __init__(self, links, lanes, *, faults=False):
        self.links = parse_sides(links, what="links")
        self.lanes = check_int(lanes, "lanes", minimum=1)
        self.faults = check_bool(faults, "faults")
        super().__init__({side.lower(): Out(TileLinkSignature(lanes, faults=faults))
                          for side in self.links})

    def create(self, *, path=None, src_loc_at=0):
        return _LinkSet(self, path=path, src_loc_at=1 + src_loc_at)


class _LinkSet(wiring.PureInterface):
    def __getitem__(self, side):
        return getattr(self, parse_side(side).input_name)


class MeshTile(wiring.Component):
    """One chip of a mesh: a ``width`` x ``height`` grid with a link on each side in ``links``
    and the lockstep barrier (module docstring; SPEC section 8).

    Parameters
    ----------
    width, height : int
        Grid size in cells, even (SPEC section 1), so that every tile of a mesh has the parity
        pattern of the global grid (SPEC section 4).
    links : str
        The sides with a neighbour, e.g. ``"E"`` or ``"NESW"`` (default ``""``: no links, the
        tile is a plain grid with the barrier logic).
    lanes : int
        Data lanes per link direction (default 1).
    ddr : bool
        Double data rate lanes (needs a ``sync90`` clock domain, see
        :class:`~bitgrid.hdl.link.phy.LinkPhy`).
    storage : ``"ff"`` or ``"memory"``
        Grid storage back end (SPEC section 7).
    faults : bool
        Build the fault models into every link transmitter (simulation only).
    replay_depth, timeout : int
        Link layer replay buffer (frames) and retransmission timeout (cycles; four times the
        physical layer's :attr:`~bitgrid.hdl.link.phy.LinkPhy.extra_latency`, the line delay
        and the I/O buffers' latency beyond one cycle, is added for the longer round trip).
    counter_width : int
        Width of :attr:`subcycle` and :attr:`limit` in bits.
    fault_seed : int
        With ``faults``: the fault models of side ``d`` are seeded with ``4 * fault_seed + d``.
    line_delay : int
        Extra transmit latency of every link in cycles (simulation of longer lines, see
        :class:`~bitgrid.hdl.link.phy.LinkPhy`).
    input_latency, output_latency : int
        Latency of the links' receive and transmit I/O buffers in cycles (default 1; see
        :mod:`bitgrid.hdl.link.ddr`: on ECP5 the DDR output takes 3).
    expose_state : bool
        Add the :attr:`state` member (as :class:`~bitgrid.hdl.grid.Grid`), for test benches.
    cells : ``"modules"``, ``"instances"`` or ``"flat"``
        How the direct grid writes its cells (:class:`~bitgrid.hdl.grid.Grid` ``cells``; the
        last two for Verilog, not for Amaranth's simulator). Default ``"modules"``.
    init : :class:`bitgrid.Configuration` or None
        The tile's configuration compiled into the gateware (the grid's ``init``: present
        from power-up, SPEC section 7); default none (unconfigured).
    engine, evaluators :
        The tile's grid (:func:`bitgrid.hdl.engines.make_grid`): ``"direct"`` (default) or
        ``"multiplexed"`` with ``evaluators`` cells per clock; the links and the barrier work
        the same with either (the step handshake of SPEC section 7).
    link_ports : dict or None
        On a real platform: side -> the requested link resource (with ``tx_clk``, ``tx_data``,
        ``rx_clk`` and ``rx_data`` ports, see :mod:`bitgrid.boards.links`); the physical layer
        then drives the pins through the platform's I/O buffers and the ``link_*`` members
        stay unused.

    Members
    -------
    cfg : In(ConfigSignature(width, height))
        The grid's configuration port (:class:`~bitgrid.hdl.grid.ConfigSignature`).
    i : In(EdgeSignature(width, height))
        Edge inputs of the sides *without* a link (the mesh's outer edge); ignored on linked
        sides, whose inputs come from the neighbour.
    o : Out(EdgeSignature(width, height))
        Edge outputs of every side (SPEC section 2).
    limit : In(counter_width)
        The tile runs subcycles while :attr:`subcycle` is below ``limit`` (the host's step
        budget; raise it to run more).
    subcycle : Out(counter_width); phase : Out(1)
        As :class:`~bitgrid.hdl.grid.Grid`.
    stalls : Out(32)
        Cycles in which the tile had budget and a valid configuration but waited for a link
        (barrier or credit).
    state : Out(4 * width * height)
        Only with ``expose_state``: every cell's outputs (see
        :class:`~bitgrid.hdl.grid.Grid`).
    link : Out(LinkSetSignature(links, lanes, faults=faults))
        Each linked side's pins, status and (with ``faults``) fault commands:
        ``link["E"].pins``, ``link["E"].status``, ``link["E"].faults``.

    Raises
    ------
    GridSizeError
        For an odd or zero size.
    ValueError
        For a bad ``links``, ``lanes``, storage kind, counter width, or a parameter the link
        layer or physical layer refuses (``replay_depth``, ``timeout``, ``fault_seed``,
        ``line_delay``, ``link_ports``).
    """

    def __init__(self, width, height, *, links="", lanes=1, ddr=False, storage="ff",
                 faults=False, replay_depth=4, timeout=256, counter_width=32, fault_seed=1,
                 line_delay=0, link_ports=None, expose_state=False, input_latency=1,
                 output_latency=1, engine="direct", evaluators=None, cells="modules",
                 init=None):
        self._width, self._height = check_grid_size(width, height)
        self._links = parse_sides(links, what="links")
        self._lanes = check_int(lanes, "lanes", minimum=1)
        counter_width = check_int(counter_width, "counter_width", minimum=9)
        self._ddr = check_bool(ddr, "ddr")
        self._storage = check_storage(storage)
        self._faults = check_bool(faults, "faults")
        self._fault_seed = check_int(fault_seed, "fault_seed", minimum=0)
        line_delay = check_line_delay(line_delay)
        self._expose_state = check_bool(expose_state, "expose_state")
        self._engine, self._evaluators = check_engine(engine), evaluators
        if self._engine != "direct" and self._expose_state:
            raise ValueError("expose_state needs the direct engine")
        self._cells = check_cell_form(cells)
        self._init = init
        if self._engine != "direct" and cells != "modules":
            raise ValueError(f"cells={cells!r} needs the direct engine")
        link_ports = dict(link_ports or {})
        unknown = set(link_ports) - set(self._links)
        if unknown:
            raise ValueError(f"link_ports names sides without a link: "
                             f"{', '.join(sorted(unknown))}")
        # The link parts of each side, built here so that they check their own parameters (the
        # tile answers for them: an unused tile warns, its parts do not).
        self._phys, self._layers = {}, {}
        for side in map(parse_side, self._links):
            phy = self._phys[side] = silence_unused(LinkPhy(
                self._lanes, ddr=self._ddr, faults=self._faults,
                fault_seed=4 * self._fault_seed + side, line_delay=line_delay,
                ports=link_ports.get(side.letter), input_latency=input_latency,
                output_latency=output_latency))
            self._layers[side] = silence_unused(LinkLayer(
                self.payload_bits(side), replay_depth=replay_depth,
                timeout=timeout + 4 * phy.extra_latency, ack_delay=ACK_DELAY))
        members = {
            "cfg": In(ConfigSignature(width, height)),
            "i": In(EdgeSignature(width, height)),
            "o": Out(EdgeSignature(width, height)),
            "limit": In(counter_width),
            "subcycle": Out(counter_width),
            "phase": Out(1),
            "stalls": Out(32),
        }
        if self._expose_state:
            members["state"] = Out(4 * width * height)
        members["link"] = Out(LinkSetSignature(self._links, self._lanes, faults=self._faults))
        super().__init__(members)

    width = property(lambda self: self._width)
    height = property(lambda self: self._height)
    links = property(lambda self: self._links, doc="Linked sides, in N, E, S, W order.")
    lanes = property(lambda self: self._lanes)
    ddr = property(lambda self: self._ddr)
    storage = property(lambda self: self._storage)
    faults = property(lambda self: self._faults)
    init = property(lambda self: self._init, doc="The tile's power-up configuration, or None.")

    def side_lanes(self, side):
        """Edge lanes on ``side``: ``width`` for N and S, ``height`` for E and W."""
        return side_lanes(side, self._width, self._height)

    def payload_bits(self, side):
        """Bits in one link frame of ``side``: half its lanes (one parity)."""
        return self.side_lanes(side) // 2

    def elaborate(self, platform):
        m = Module()
        options = {"expose_state": True} if self._expose_state else {}
        if self._cells != "modules":
            options["cells"] = self._cells
        m.submodules.grid = grid = make_grid(self._width, self._height, engine=self._engine,
                                             evaluators=self._evaluators, storage=self._storage,
                                             init=self._init,
                                             counter_width=len(self.subcycle), **options)
        if self._expose_state:
            m.d.comb += self.state.eq(grid.state)
        wiring.connect(m, wiring.flipped(self.cfg), grid.cfg)
        wiring.connect(m, grid.o, wiring.flipped(self.o))
        outs = dict(zip(DIRECTIONS, (grid.o.n, grid.o.e, grid.o.s, grid.o.w)))
        grid_ins = dict(zip(DIRECTIONS, (grid.i.n, grid.i.e, grid.i.s, grid.i.w)))
        my_ins = dict(zip(DIRECTIONS, (self.i.n, self.i.e, self.i.s, self.i.w)))

        subcycle = grid.subcycle
        m.d.comb += [self.subcycle.eq(subcycle), self.phase.eq(grid.phase)]

        budget = Signal()
        m.d.comb += budget.eq(grid.cfg.valid & (subcycle < self.limit))
        step = Signal()
        # All of these must hold for a step; each linked side adds its terms below.
        ready_terms = []

        # The subcycle just run: its parity selects the lanes of the frames now owed.
        last_parity = Signal()
        m.d.comb += last_parity.eq(~grid.phase)

        for side in DIRECTIONS:
            if side not in self._phys:
                m.d.comb += grid_ins[side].eq(my_ins[side])
                continue
            s = side.input_name
            lanes = self.side_lanes(side)
            bits = lanes // 2
            link = self.link[side]

            phy = m.submodules[f"phy_{s}"] = self._phys[side]
            layer = m.submodules[f"layer_{s}"] = self._layers[side]
            wiring.connect(m, layer.tx, phy.tx)
            wiring.connect(m, phy.rx, layer.rx)
            wiring.connect(m, wiring.flipped(link.pins), phy.pins)
            if self._faults:
                wiring.connect(m, wiring.flipped(link.faults), phy.faults)

            # Transmit: after every subcycle, one frame owed to this side's link layer.
            owed = Signal(name=f"owed_{s}")
            payload = [Signal(bits, name=f"payload_{s}_{p}") for p in (0, 1)]
            for p in (0, 1):
                lanes_p = fresh_lanes(side, lanes, p)
                m.d.comb += payload[p].eq(Cat(outs[side][i] for i in lanes_p))
            m.d.comb += [
                layer.send.valid.eq(owed & grid.step_ready),   # once the outputs are out
                layer.send.payload.eq(Mux(last_parity, payload[1], payload[0])),
            ]
            with m.If(step):
                m.d.sync += owed.eq(1)
            with m.Elif(layer.send.valid & layer.send.ready):
                m.d.sync += owed.eq(0)

            # Receive: apply each frame to the lanes it carries; count frames (mod 256).
            rx_lanes = Signal(lanes, name=f"rx_lanes_{s}")
            received = Signal(8, name=f"received_{s}")
            m.d.comb += grid_ins[side].eq(rx_lanes)
            with m.If(layer.recv.valid):
                m.d.sync += received.eq(received + 1)
                # Frame t from the neighbour's opposite side: its sending cells have parity
                # t % 2, so the lanes are fresh_lanes(opposite side, lanes, t).
                peer = side.opposite
                with m.If(received[0]):
                    for k, i in enumerate(fresh_lanes(peer, lanes, 1)):
                        m.d.sync += rx_lanes[i].eq(layer.recv.payload[k])
                with m.Else():
                    for k, i in enumerate(fresh_lanes(peer, lanes, 0)):
                        m.d.sync += rx_lanes[i].eq(layer.recv.payload[k])

            # Barrier: subcycle t needs frames 0 .. t-1, i.e. received >= t (mod 256; the
            # neighbour is never more than one subcycle ahead or behind).
            have = Signal(name=f"have_{s}")
            lag = Signal(8, name=f"lag_{s}")
            m.d.comb += [lag.eq(received - subcycle[:8]), have.eq(~lag[7])]
            ready_terms += [have, ~owed]

            status = link.status
            m.d.comb += [status.aligned.eq(phy.aligned), status.credit.eq(layer.credit)]
            for name, _, source in _COUNTERS:
                m.d.comb += getattr(status, name).eq(getattr(layer if source == "layer" else phy,
                                                             name))
            if self._faults:
                for name in _FAULT_COUNTERS:
                    m.d.comb += getattr(status, name).eq(getattr(phy.fault_counters, name))

        links_ready = Signal()
        m.d.comb += links_ready.eq(Cat(ready_terms).all() if ready_terms else 1)
        # `step` is a step the grid accepts (SPEC section 7 handshake; the direct grid's
        # step_ready is the constant 1).
        m.d.comb += [step.eq(budget & links_ready & grid.step_ready), grid.step.eq(step)]
        with m.If(budget & ~links_ready & (self.stalls != 0xffff_ffff)):
            m.d.sync += self.stalls.eq(self.stalls + 1)
        return m


class Mesh(wiring.Component):
    """``cols`` x ``rows`` :class:`MeshTile` s of ``tile_width`` x ``tile_height`` cells joined by
    their links: one simulatable design that behaves as a grid of
    ``cols * tile_width`` x ``rows * tile_height`` cells (SPEC section 8). The test harness of
    ``bitgrid sim --mesh``; on hardware every tile is a chip of its own.

    Tile ``i = row * cols + col`` runs in its own clock domain, clocked by ``clk_<i>`` and reset
    (synchronously) by bit ``i`` of ``rst``, so the test bench can give neighbours different
    clock rates.
    Tile ``(col, row)`` holds the cells ``(col * tile_width + x, row * tile_height + y)`` of the
    global grid (:func:`bitgrid.mesh.slice_configuration` makes its configuration).

    Links are numbered in :meth:`link_list` order: for each tile, its linked sides in N, E, S, W
    order; link ``k`` is the *transmit* direction of that side (its fault commands and status).

    Parameters
    ----------
    cols, rows : int
        Mesh shape in tiles (positive).
    tile_width, tile_height : int
        Tile size in cells (even).
    lanes, ddr, storage, faults, replay_depth, timeout, counter_width, line_delay,
    input_latency, output_latency, cells
        As :class:`MeshTile`.
    init : :class:`bitgrid.Configuration` or None
        A configuration of the whole ``cols * tile_width`` x ``rows * tile_height`` grid
        compiled into the gateware, each tile its slice
        (:func:`bitgrid.mesh.slice_configuration`); default none.

    Members
    -------
    clk_0, clk_1, ... : In(1)
        Clock of each tile (one scalar port per tile, so that a test bench can drive each).
    clk90_0, ... : In(1)
        Only with ``ddr``: each tile's clock shifted by 90 degrees (a quarter period later).
    rst : In(cols * rows)
        Synchronous reset of each tile.
    cfg : In(ConfigSignature(tile_width, tile_height)).array(cols * rows)
        Each tile's configuration port (in that tile's clock domain).
    limit : In(counter_width)
        Step budget shared by every tile (:attr:`MeshTile.limit`).
    subcycle : Out(counter_width).array(cols * rows)
    stalls : Out(32).array(cols * rows)
    state : Out(4 * tile_width * tile_height).array(cols * rows)
        Every cell's outputs of each tile (:attr:`MeshTile.state`), so that a bench can compare
        whole states, not only edges.
    i : In(EdgeSignature(cols * tile_width, rows * tile_height))
    o : Out(EdgeSignature(cols * tile_width, rows * tile_height))
        The global edge buses (SPEC section 2 numbering over the whole mesh).
    status : Out(LinkStatusSignature(faults)).array(len(link_list()))
    faults : In(FaultControlSignature(lanes)).array(len(link_list()))
        Only with ``faults=True``.
    """

    def __init__(self, cols, rows, tile_width, tile_height, *, lanes=1, ddr=False,
                 storage="ff", faults=False, replay_depth=4, timeout=256, counter_width=32,
                 line_delay=0, input_latency=1, output_latency=1, cells="modules",
                 init=None):
        self._cols = check_int(cols, "Mesh cols", minimum=1)
        self._rows = check_int(rows, "Mesh rows", minimum=1)
        self._tile = check_grid_size(tile_width, tile_height)
        self._options = dict(lanes=lanes, ddr=ddr, storage=storage, faults=faults,
                             replay_depth=replay_depth, timeout=timeout,
                             counter_width=counter_width, line_delay=line_delay,
                             input_latency=input_latency, output_latency=output_latency)
        # Each tile's slice of the configuration compiled into the gateware (or none).
        slices = {} if init is None else slice_configuration(init, MeshShape(cols, rows))
        # The tiles, built here so that they check the options (the mesh answers for them).
        self._tiles = {(c, r): silence_unused(MeshTile(
                           *self._tile, links=tile_links(cols, rows, c, r),
                           fault_seed=1 + r * cols + c, expose_state=True,
                           cells=cells, init=slices.get((c, r)),
                           **self._options))
                       for r in range(rows) for c in range(cols)}
        n = cols * rows
        width, height = cols * tile_width, rows * tile_height
        members = {
            "rst": In(n),
            "cfg": In(ConfigSignature(tile_width, tile_height)).array(n),
            "limit": In(counter_width),
            "subcycle": Out(counter_width).array(n),
            "stalls": Out(32).array(n),
            "state": Out(4 * tile_width * tile_height).array(n),
            "i": In(EdgeSignature(width, height)),
            "o": Out(EdgeSignature(width, height)),
        }
        for index in range(n):
            members[f"clk_{index}"] = In(1)
            if ddr:
                members[f"clk90_{index}"] = In(1)
        links = self.link_list()
        if links:
            members["status"] = Out(LinkStatusSignature(faults)).array(len(links))
            if faults:
                members["faults"] = In(FaultControlSignature(lanes)).array(len(links))
        super().__init__(members)

    cols = property(lambda self: self._cols)
    rows = property(lambda self: self._rows)
    tile_width = property(lambda self: self._tile[0])
    tile_height = property(lambda self: self._tile[1])
    tiles = property(lambda self: dict(self._tiles),
                     doc="The tiles as ``{(col, row): MeshTile}``.")
    width = property(lambda self: self._cols * self._tile[0])
    height = property(lambda self: self._rows * self._tile[1])

    def link_list(self):
        """``[(col, row, side), ...]``: every transmit direction, in the order of
        :attr:`status` and :attr:`faults`."""
        return mesh_links(self._cols, self._rows)

    def elaborate(self, platform):
        m = Module()
        tw, th = self._tile
        cols, rows = self._cols, self._rows
        ddr = self._options["ddr"]
        tiles = {}
        for index in range(cols * rows):
            c, r = index % cols, index // cols
            tile = self._tiles[c, r]
            domain = f"tile{index}"
            m.domains += ClockDomain(domain)
            m.d.comb += [ClockSignal(domain).eq(getattr(self, f"clk_{index}")),
                         ResetSignal(domain).eq(self.rst[index])]
            renames = {"sync": domain}
            if ddr:
                m.domains += ClockDomain(f"{domain}_90")
                m.d.comb += [ClockSignal(f"{domain}_90").eq(getattr(self, f"clk90_{index}")),
                             ResetSignal(f"{domain}_90").eq(self.rst[index])]
                renames["sync90"] = f"{domain}_90"
            m.submodules[f"tile_{c}_{r}"] = DomainRenamer(renames)(tile)
            tiles[c, r] = tile
            wiring.connect(m, wiring.flipped(self.cfg[index]), tile.cfg)
            m.d.comb += [tile.limit.eq(self.limit), self.subcycle[index].eq(tile.subcycle),
                         self.stalls[index].eq(tile.stalls), self.state[index].eq(tile.state)]
            # Outer edges: the global buses.
            if r == 0:
                m.d.comb += [tile.i.n.eq(self.i.n[c * tw:(c + 1) * tw]),
                             self.o.n[c * tw:(c + 1) * tw].eq(tile.o.n)]
            if r == rows - 1:
                m.d.comb += [tile.i.s.eq(self.i.s[c * tw:(c + 1) * tw]),
                             self.o.s[c * tw:(c + 1) * tw].eq(tile.o.s)]
            if c == 0:
                m.d.comb += [tile.i.w.eq(self.i.w[r * th:(r + 1) * th]),
                             self.o.w[r * th:(r + 1) * th].eq(tile.o.w)]
            if c == cols - 1:
                m.d.comb += [tile.i.e.eq(self.i.e[r * th:(r + 1) * th]),
                             self.o.e[r * th:(r + 1) * th].eq(tile.o.e)]
        # Links: E of (c, r) to W of (c+1, r); S of (c, r) to N of (c, r+1).
        for (c, r), tile in tiles.items():
            for side in (E, S):
                dc, dr = side.step
                peer = tiles.get((c + dc, r + dr))
                if peer is None:
                    continue
                a, b = tile.link[side].pins, peer.link[side.opposite].pins
                m.d.comb += [b.rx_clk.eq(a.tx_clk), b.rx_data.eq(a.tx_data),
                             a.rx_clk.eq(b.tx_clk), a.rx_data.eq(b.tx_data)]
        for k, (c, r, side) in enumerate(self.link_list()):
            link = tiles[c, r].link[side]
            wiring.connect(m, link.status, wiring.flipped(self.status[k]))
            if self._options["faults"]:
                wiring.connect(m, wiring.flipped(self.faults[k]), link.faults)
        return m
