"""Port maps: which edge lanes carry which named port bits, and when (``bitgrid-ports-v1``).

A BitGrid program only sees edge lanes. A *port map* names groups of lanes as ports (``a``,
``b``, ``sum``), so that a program can be driven and read by port values
(``bitgrid eval``), and it records the program's timing. It is written by ``bitgrid asm``
(from the port declarations of the text format) and ``bitgrid compile``, moved along by
``bitgrid transform`` and ``bitgrid place``, and read by ``bitgrid eval`` and ``bitgrid view``.
One format for all of them; docs/ports.md describes it for users.

File format (JSON, UTF-8)::

    {"format": "bitgrid-ports-v1",
     "width": 8, "height": 8,              # the grid the program is for (cells)
     "period": 2,                           # subcycles per design cycle (even, >= 2)
     "latency": 9,                          # subcycles from a row's inputs to its outputs
     "program": "sha256:3f1c...",           # the configuration it describes (optional)
     "seal": "sha256:9a0e...",              # program + every value-changing field (optional)
     "ports": [
       {"name": "a", "direction": "in", "signed": false,
        "bits": [{"side": "W", "lane": 0}, {"side": "W", "lane": 1, "skew": 2}, ...]},
       {"name": "sum", "direction": "out",
        "bits": [{"side": "E", "lane": 0}, ...]}]}

``bits`` lists the port's bits least significant first; ``signed`` (default false) says the
port is two's complement; ``skew`` (default 0) is a per-bit offset in subcycles. ``program``
(optional: files written before it have none) is the digest of the configuration the port
map describes (:meth:`bitgrid.config.Configuration.digest`, ``"sha256:..."``): every tool
that writes a program with its port map writes it, and every tool that reads both checks it
(:meth:`PortMap.check_program`), so that a port map is never applied to another program.
``seal`` (optional too) is a digest over ``program`` and every field that changes a value
(:meth:`PortMap.seal_for`: the size, period, latency, and each port's direction, signedness
and bits with their sides, lanes and skews; not the names, which may be renamed freely):
the tools write it beside ``program``, and a reader refuses a map whose seal does not match
(it was edited after it was written). A map without a seal (written by hand) is checked
against the program's paths instead (:func:`bitgrid.analysis.check_port_timing`).

Timing (SPEC section 4; subcycle 0 is the first after reset). Design cycle ``k`` (row ``k`` of
an eval CSV) starts at subcycle ``k * period``:

* an input bit with skew ``s`` carries row ``k``'s value on its lane during subcycles
  ``k * period + s`` to ``(k + 1) * period + s - 1`` (before row 0's window the lane is 0,
  after the last row it keeps the last row's value);
* an output bit with skew ``s`` holds row ``k``'s value after subcycle
  ``k * period + latency + s - 1``, that is, after ``k * period + latency + s`` subcycles
  have run (index ``k * period + latency + s - 1`` of a list of per-subcycle edge outputs).
  A combinational output reflects row ``k``; a registered output the state after ``k`` clock
  edges (issue 12's cycle semantics).

So ``latency`` counts subcycles from applying a row to reading it: a straight route of ``n``
cells from an edge lane whose first cell has the parity of subcycle 0 has latency ``n``
(:func:`bitgrid.program.route_latency`). Every output bit needs ``latency + skew >= 1`` and
every input bit ``skew >= 0``.

Lanes not named by any input port are driven 0. A lane may carry at most one input bit and at
most one output bit (an input and an output may share a lane number on a side: they are
different wires).
"""

import hashlib
import json
import re
import typing

from .checks import check_bool, check_choice, check_int
from .config import check_grid_size
from .files import atomic_write, read_json
from .terms import Direction, parse_side, side_lanes

__all__ = ["FORMAT", "MAX_SUBCYCLES", "MAX_ROWS", "PortMapError", "SealError", "PortBit", "Port",
           "PortMap", "load", "save"]

#: A configuration digest (:meth:`bitgrid.config.Configuration.digest`).
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")

#: The ``format`` value of a port-map file.
FORMAT = "bitgrid-ports-v1"
#: Port directions.
DIRECTIONS = ("in", "out")
#: Largest port width in bits (a CSV value of at most this many bits).
MAX_PORT_BITS = 4096
#: Most subcycles one evaluation runs (:mod:`bitgrid.evaluate`), and so the most an input
#: skew may make a row wait.
MAX_SUBCYCLES = 1 << 22
#: Most rows one evaluation takes (:mod:`bitgrid.evaluate`, a CSV file of rows).
MAX_ROWS = 1_000_000


class PortMapError(ValueError):
    """A port map that does not follow ``bitgrid-ports-v1`` or does not fit its grid; the
    message names the port and bit."""


class SealError(PortMapError):
    """A port map whose seal does not match its fields: it was changed after a tool wrote it
    (:meth:`PortMap.check_program`)."""


class PortBit(typing.NamedTuple):
    """One bit of a port: the lane ``lane`` of the edge bus on ``side`` (a
    :class:`~bitgrid.terms.Direction`), with a timing offset ``skew`` in subcycles."""
    side: Direction
    lane: int
    skew: int = 0

    def to_json(self):
        entry = {"side": self.side.letter, "lane": self.lane}
        if self.skew:
            entry["skew"] = self.skew
        return entry


class Port(typing.NamedTuple):
    """A named port: ``direction`` ``"in"`` or ``"out"``, ``bits`` (a tuple of
    :class:`PortBit`, least significant first) and ``signed`` (two's complement)."""
    name: str
    direction: str
    bits: tuple
    signed: bool = False

    @property
    def width(self):
        """Number of bits."""
        return len(self.bits)

    @property
    def minimum(self):
        """Smallest value the port holds."""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def maximum(self):
        """Largest value the port holds."""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    def encode(self, value):
        """The port's bits (list of 0/1, least significant first) for the integer ``value``.

        :raises ValueError: ``Value 300 does not fit port a (8 bits, unsigned: 0..255)``.
        """
        if not self.minimum <= value <= self.maximum:
            kind = "signed" if self.signed else "unsigned"
            raise ValueError(f"Value {value} does not fit port {self.name} ({self.width} "
                             f"bit{'s' if self.width != 1 else ''}, {kind}: "
                             f"{self.minimum}..{self.maximum})")
        value &= (1 << self.width) - 1
        return [(value >> i) & 1 for i in range(self.width)]

    def decode(self, bits):
        """The integer held by ``bits`` (least significant first), sign-extended if signed."""
        value = sum((int(b) & 1) << i for i, b in enumerate(bits))
        if self.signed and self.width and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def to_json(self):
        entry = {"name": self.name, "direction": self.direction}
        if self.signed:
            entry["signed"] = True
        entry["bits"] = [bit.to_json() for bit in self.bits]
        return entry


def _check_name(name, where):
    if not isinstance(name, str) or not name or not (name[0].isalpha() or name[0] == "_") \
            or not all(c.isalnum() or c in "_$." for c in name):
        raise PortMapError(f"{where}: a port name is a letter or _ followed by letters, digits, "
                           f"_, $ or ., not {name!r}")
    return name


class PortMap:
    """The ports and timing of a program for a ``width`` x ``height`` grid (see the module
    docstring for the format and timing).

    :param ports: :class:`Port` objects (or their JSON dicts), in file order.
    :param period: subcycles per design cycle, even and at least 2.
    :param latency: subcycles from a row's inputs to its outputs, at least 0.
    :param history: design cycles back that an output reaches through the registers the
        compiler retimed into the port timing (:mod:`bitgrid.compiler.retime`): row ``k``'s
        outputs depend on the input rows ``k - history`` to ``k``; 0 (the default, not written)
        for a program whose outputs depend on their own row's inputs (and its state).
    :raises PortMapError: for a bad name, a name used twice, a lane outside the grid, a lane
        used twice in one direction, a bad skew, period or latency.
    """

    def __init__(self, width, height, ports=(), *, period=2, latency=0, history=0,
                 program=None, seal=None):
        try:
            self.width, self.height = check_grid_size(width, height)
            self.period = check_int(period, "Period", minimum=2, even=True)
            self.latency = check_int(latency, "Latency", minimum=0)
            self.history = check_int(history, "History", minimum=0, maximum=MAX_SUBCYCLES)
        except ValueError as error:
            raise PortMapError(str(error)) from None
        if program is not None and not (isinstance(program, str) and _DIGEST.match(program)):
            raise PortMapError(f"Program: a digest is 'sha256:' and 64 hex digits, not "
                               f"{program!r}")
        if seal is not None and not (isinstance(seal, str) and _DIGEST.match(seal)):
            raise PortMapError(f"Seal: a digest is 'sha256:' and 64 hex digits, not {seal!r}")
        if seal is not None and program is None:
            raise SealError("a seal without the program's digest: the map was changed after "
                            "it was written; use the port map written with the program")
        self.program = program
        self.seal = seal
        self._ports = {}
        used = {}
        for port in ports:
            port = self._coerce_port(port)
            if port.name in self._ports:
                raise PortMapError(f"Port {port.name} is declared twice")
            for i, bit in enumerate(port.bits):
                key = (port.direction, bit.side, bit.lane)
                if key in used:
                    raise PortMapError(f"Port {port.name} bit {i}: {port.direction}put lane "
                                       f"{bit.side.letter}{bit.lane} is already bit "
                                       f"{used[key][1]} of port {used[key][0]}")
                used[key] = (port.name, i)
            self._ports[port.name] = port

    def _coerce_port(self, port):
        if isinstance(port, Port):
            port = port.to_json()
        if not isinstance(port, dict):
            raise PortMapError(f"A port is an object with name, direction and bits, not "
                               f"{port!r}")
        unknown = set(port) - {"name", "direction", "signed", "bits"}
        name = _check_name(port.get("name"), "Port")
        if unknown:
            raise PortMapError(f"Port {name}: unknown keys {sorted(unknown)}")
        try:
            direction = check_choice(port.get("direction"), f"Port {name} direction",
                                     DIRECTIONS)
            signed = check_bool(port.get("signed", False), f"Port {name} signed")
        except ValueError as error:
            raise PortMapError(str(error)) from None
        raw = port.get("bits")
        if not isinstance(raw, (list, tuple)) or not 1 <= len(raw) <= MAX_PORT_BITS:
            raise PortMapError(f"Port {name}: bits must be a list of 1 to {MAX_PORT_BITS} "
                               "lanes")
        bits = []
        for i, bit in enumerate(raw):
            where = f"Port {name} bit {i}"
            if isinstance(bit, PortBit):
                bit = bit.to_json()
            if not isinstance(bit, dict) or set(bit) - {"side", "lane", "skew"}:
                raise PortMapError(f"{where}: a bit is {{\"side\", \"lane\"[, \"skew\"]}}, "
                                   f"not {bit!r}")
            try:
                side = parse_side(bit.get("side"))
                lanes = side_lanes(side, self.width, self.height)
                lane = check_int(bit.get("lane"), f"{where} lane", minimum=0,
                                 maximum=lanes - 1)
                skew = check_int(bit.get("skew", 0), f"{where} skew",
                                 minimum=0 if direction == "in" else 1 - self.latency)
            except ValueError as error:
                raise PortMapError(f"{where}: {error}" if not str(error).startswith(where)
                                   else str(error)) from None
            bits.append(PortBit(side, lane, skew))
        return Port(name, direction, tuple(bits), signed)

    # Access -----------------------------------------------------------------------------------
    @property
    def ports(self):
        """All ports, in declaration order."""
        return tuple(self._ports.values())

    @property
    def inputs(self):
        """The input ports, in declaration order."""
        return tuple(p for p in self._ports.values() if p.direction == "in")

    @property
    def outputs(self):
        """The output ports, in declaration order."""
        return tuple(p for p in self._ports.values() if p.direction == "out")

    def __getitem__(self, name):
        try:
            return self._ports[name]
        except KeyError:
            raise KeyError(f"No port {name!r}; the ports are "
                           f"{', '.join(self._ports) or '(none)'}") from None

    def __contains__(self, name):
        return name in self._ports

    def __eq__(self, other):
        return (isinstance(other, PortMap) and self.to_json() == other.to_json())

    def __repr__(self):
        return (f"PortMap({self.width} x {self.height}, period {self.period}, latency "
                f"{self.latency}, ports {', '.join(self._ports) or '(none)'})")

    @property
    def depth(self):
        """Subcycles from row 0's first input until the last output bit of row 0 is readable:
        ``latency + max(output skew)`` (``latency`` when there are no outputs)."""
        skews = [b.skew for p in self.outputs for b in p.bits]
        return self.latency + max(skews, default=0)

    def replace(self, *, width=None, height=None, ports=None, period=None, latency=None,
                history=None):
        """A new port map with the given fields changed (the others kept), checked again; it
        records no program and no seal (the change makes it describe another one:
        :meth:`for_program`)."""
        return PortMap(self.width if width is None else width,
                       self.height if height is None else height,
                       self.ports if ports is None else ports,
                       period=self.period if period is None else period,
                       latency=self.latency if latency is None else latency,
                       history=self.history if history is None else history)

    def for_program(self, config):
        """This port map recording ``config``'s digest and sealed for it (:meth:`seal_for`):
        what a tool writes beside a program.

        :raises PortMapError: if ``config`` is not of the port map's grid size.
        """
        self.check_grid(config.width, config.height)
        result = self.replace()
        result.program = config.digest()
        result.seal = result.seal_for(result.program)
        return result

    def seal_for(self, program):
        """The seal of this port map for the program digest ``program`` (a string
        ``"sha256:..."``): ``"sha256:"`` and 64 hex digits over ``program`` and every field
        that changes a value read or written through the map: the grid size, the period,
        the latency, and each port's direction, signedness and bits (side, lane and skew, in
        order). Port names and the order of the ports in the file are left out: renaming a
        port or moving it in the file keeps the seal."""
        ports = sorted([port.direction, port.signed,
                        [[bit.side.letter, bit.lane, bit.skew] for bit in port.bits]]
                       for port in self.ports)
        fields = {"program": program, "width": self.width, "height": self.height,
                  "period": self.period, "latency": self.latency, "ports": ports}
        if self.history:                    # (absent when 0: older seals stay valid)
            fields["history"] = self.history
        text = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    @property
    def sealed(self):
        """Whether the map carries a seal (a tool wrote it: :meth:`for_program`)."""
        return self.seal is not None

    def check_program(self, config, *, names=("the port map", "the program")):
        """``self`` if it describes ``config``: the grid size, the digest where the file has
        one, the seal where it has one (:meth:`seal_for`), and timing within what the program
        can hold (the latency and every output skew at most :meth:`timing_limit`; an input skew,
the subcycles a row waits before it is applied, at most :data:`MAX_SUBCYCLES`: a program
whose registers were retimed into its port timing waits a row ``P`` subcycles per register,
:mod:`bitgrid.compiler.retime`). A map without a
        seal is not checked against the program's paths here: the command line does that
        (:func:`bitgrid.analysis.check_port_timing`).

        :param names: ``(port map, program)`` as the user named them, for the message.
        :raises PortMapError: naming both files and what to do (:class:`SealError` for a
            broken seal).
        """
        ports, program = names
        if (config.width, config.height) != (self.width, self.height):
            raise PortMapError(f"{ports} is for a {self.width} x {self.height} grid, {program} "
                               f"is {config.width} x {config.height}: give the port map "
                               "written with this program")
        if self.program is not None and self.program != config.digest():
            raise PortMapError(f"{ports} was written for another program than {program} (its "
                               "configuration digest differs): give the port map written "
                               "with this program")
        if self.seal is not None and self.seal != self.seal_for(self.program):
            raise SealError(f"{ports} was changed after it was written (its seal does not "
                            "match its lanes, skews, signs, latency or period): use the port "
                            f"map written with {program}, or write both again with the tool "
                            "that made them (names may be changed freely)")
        limit = self.timing_limit
        worst = max([self.latency] + [abs(b.skew) for p in self.outputs for b in p.bits])
        waits = max([b.skew for p in self.inputs for b in p.bits], default=0)
        if waits > MAX_SUBCYCLES:
            raise PortMapError(f"{ports}: an input skew of {waits} subcycles is more than any "
                               f"run of {program} could wait ({MAX_SUBCYCLES}): give the port "
                               "map written with this program")
        if worst > limit:
            raise PortMapError(f"{ports}: a latency or skew of {worst} subcycles is more than "
                               f"{program} can hold ({limit}: its {self.width * self.height} "
                               "cells, one subcycle each, plus a period): give the port map "
                               "written with this program")
        return self

    @property
    def timing_limit(self):
        """The most subcycles a latency or skew can mean for this grid: ``width * height +
        period`` (a signal visits each cell at most once a row, one subcycle a cell)."""
        return self.width * self.height + self.period

    def map_bits(self, function, *, width=None, height=None, latency=None):
        """A new port map whose every bit is ``function(port, bit)`` (a :class:`PortBit`), for
        example the lanes of a moved or rotated program (``bitgrid transform``).

        :raises PortMapError: if the moved bits do not fit the (new) grid.
        """
        ports = [port._replace(bits=tuple(PortBit(*function(port, bit)) for bit in port.bits))
                 for port in self.ports]
        return self.replace(width=width, height=height, ports=ports, latency=latency)

    def check_grid(self, width, height):
        """``self`` if it is for a ``width`` x ``height`` grid.

        :raises PortMapError: ``The port map is for a 8 x 8 grid, the program is 4 x 4``.
        """
        if (width, height) != (self.width, self.height):
            raise PortMapError(f"The port map is for a {self.width} x {self.height} grid, the "
                               f"program is {width} x {height}")
        return self

    def cycles_needed(self, rows):
        """Subcycles to run so that every output of ``rows`` design cycles is readable:
        ``(rows - 1) * period + depth`` (at least 1)."""
        rows = check_int(rows, "Rows", minimum=1)
        return max(1, (rows - 1) * self.period + self.depth)

    # Files ------------------------------------------------------------------------------------
    def to_json(self):
        """The ``bitgrid-ports-v1`` document as a dict."""
        return {"format": FORMAT, "width": self.width, "height": self.height,
                "period": self.period, "latency": self.latency,
                **({"history": self.history} if self.history else {}),
                **({"program": self.program} if self.program is not None else {}),
                **({"seal": self.seal} if self.seal is not None else {}),
                "ports": [port.to_json() for port in self.ports]}

    def dumps(self):
        """The document as JSON text (one port per line)."""
        head = {k: v for k, v in self.to_json().items() if k != "ports"}
        lines = [json.dumps(port.to_json()) for port in self.ports]
        body = ",\n  ".join(lines)
        return (json.dumps(head)[:-1] + ', "ports": [\n  ' + body + "\n]}\n" if lines
                else json.dumps(dict(head, ports=[])) + "\n")

    @classmethod
    def from_json(cls, document, *, where="port map"):
        """Read a ``bitgrid-ports-v1`` document (a dict).

        :raises PortMapError: naming ``where`` and the problem.
        """
        if not isinstance(document, dict):
            raise PortMapError(f"{where}: not a {FORMAT} document (a JSON object)")
        if document.get("format") != FORMAT:
            raise PortMapError(f"{where}: format is {document.get('format')!r}, expected "
                               f"{FORMAT!r}")
        unknown = set(document) - {"format", "width", "height", "period", "latency", "history",
                                   "program", "seal", "ports"}
        if unknown:
            raise PortMapError(f"{where}: unknown keys {sorted(unknown)}")
        ports = document.get("ports", [])
        if not isinstance(ports, list):
            raise PortMapError(f"{where}: ports must be a list")
        try:
            return cls(document.get("width"), document.get("height"), ports,
                       period=document.get("period", 2), latency=document.get("latency", 0),
                       history=document.get("history", 0),
                       program=document.get("program"), seal=document.get("seal"))
        except PortMapError as error:
            raise PortMapError(f"{where}: {error}") from None


def load(path):
    """Read a port-map file.

    :raises PortMapError: for a file that is not valid JSON or not ``bitgrid-ports-v1``
        (the message names the file).
    :raises OSError: if the file cannot be read.
    """
    document = read_json(path, "port map", PortMapError)
    return PortMap.from_json(document, where=str(path))


def save(path, portmap, config=None):
    """Write ``portmap`` to ``path`` (atomically, :func:`bitgrid.files.atomic_write`), with
    ``config``'s digest when given (:meth:`PortMap.for_program`)."""
    atomic_write(path, (portmap if config is None else portmap.for_program(config)).dumps())

