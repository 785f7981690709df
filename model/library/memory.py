"""Storage blocks: the register file and the ROM (SPEC sections 3 and 4; docs/library.md).

A register file of ``words`` x ``width`` bits with one write port and ``read_ports``
combinational read ports, fully pipelined at period 2: a write in row ``k`` is seen by a read in
row ``k + 1``, as in ``always @(posedge clk) if (we) m[waddr] <= wdata; assign rdata =
m[raddr];``.

Layout (one *tile* of ``read_ports + 2`` columns by ``read_ports + 1`` rows per stored bit;
words are rows of tiles, bits are columns of tiles, the address decoders are columns to the
west):

- Row 0 of a word carries its one-hot write select ``ws`` west to east; row ``r`` (1 ..
  read_ports) carries read port ``r``'s select ``rs_r``. Column ``read_ports + 1`` of a bit
  carries the write data ``d`` north to south; column ``read_ports - r`` carries read port
  ``r``'s data ``r_r``, an AND-OR chain north to south.
- The stored bit is a loop of two cells, ``A`` at (read_ports, 0) computing ``q' = ws ? d : q``
  (``d`` turned west to it by the data column's cell) and ``B`` below it sending ``q`` back;
  one loop is one design cycle at period 2, so ``q`` is a register. ``B`` also sends ``q`` west
  to read port 1's chain cell, which computes ``r_1 | (q & rs_1)``, and down the column to the
  further ports' rows.
- Decoders: a column per address bit (and one for ``we``) carries it south; on each word's
  select row a chain of one cell per address bit computes ``we & (waddr == word)`` (or
  ``raddr_r == word``) west to east, one cell per subcycle, so the selects reach the words in
  the same skewed wave as the data down the columns (systolic timing).

Initial contents are kept by storing ``q ^ init`` (0 after reset) and reading it back through
the same constant. Addresses past the last word write nothing; a read there follows the
address down the binary tree of the words and lands where Yosys' ``memory_map`` does
(:func:`read_word`: Verilog leaves such a read undefined, so any word is right, and this one
agrees with the netlist the compiler checks against).

Cells: ``words * width * (read_ports + 2) * (read_ports + 1)`` in the array (6 per bit with one
read port, the floor of this one-hot layout is about 5: every eastward wire carries a select and
every southward wire a data or chain bit, and each loop needs one more) plus, at most,
``words * (read_ports + 1)`` times ``1 + abits + read_ports * address_bits(words)`` columns
in the decoders.

The ROM (:func:`rom`) is the read side alone: one row per word and port, one chain column per
bit and port. Either block can show a fixed value in row 0 instead of a read
(:func:`gate_first_row`), for a registered read port the compiler applies a row late.
"""

import functools
import inspect

from ..analysis import support
from ..cell import COPY_E, COPY_N, COPY_W, lut_from_function
from ..terms import DIRECTIONS, E, N, S, W
from .basic import check_box
from .block import Block, LibraryError

__all__ = ["register_file", "rom", "address_bits", "read_word", "gate_first_row"]


def _read_match(words, word, k):
    """The LUT of read select chain cell ``k`` of ``word`` (bit ``k`` of the address from N,
    the chain from W; cell 0 starts the chain). A read follows the address down the binary
    tree of the words from its top bit and takes bit ``k`` only where the node has a
    1-child below ``words``, so past the last word it lands on a word as Yosys' memory_map
    reads it; where there is no 1-child the bit is not compared (the chain passes)."""
    care = ((word >> (k + 1)) << (k + 1)) + (1 << k) < words
    if care:
        return (_MATCH_FIRST if k == 0 else _MATCH)[(word >> k) & 1]
    return 0xFFFF if k == 0 else COPY_W


def read_word(words, address, bits=None):
    """The word a read of ``address`` gives in a memory of ``words`` words (``bits`` address
    bits): the address itself if below ``words``, else where its path down the tree of the
    words ends (each bit that would lead past the end taken as 0; :func:`_read_match`)."""
    bits = address_bits(words) if bits is None else bits
    word = 0
    for k in reversed(range(bits)):
        if word + (1 << k) < words and address >> k & 1:
            word += 1 << k
    return word


def address_bits(words):
    """The address width of a memory of ``words`` words (at least 1)."""
    return max(1, (words - 1).bit_length())


def _table(function, **constants):
    """The LUT (SPEC section 3) of ``function`` of the inputs it names among ``n, e, s, w``,
    with ``constants`` bound (:func:`~bitgrid.cell.lut_from_function` with constants)."""
    names = [p for p in inspect.signature(function).parameters if p not in constants]
    return lut_from_function(lambda n, e, s, w: function(
        **{p: {"n": n, "e": e, "s": s, "w": w}[p] for p in names}, **constants))


#: q' = ws (W) ? d (E) ^ init : q (S), by init bit.
_STORE = tuple(_table(lambda w, e, s, i: (e ^ i) if w else s, i=i) for i in (0, 1))
#: r' = r (N) | ((q (E) ^ init) & rs (W)), by init bit; and without a chain above.
_READ = tuple(_table(lambda n, e, w, i: n | ((e ^ i) & w), i=i) for i in (0, 1))
_READ_FIRST = tuple(_table(lambda e, w, i: (e ^ i) & w, i=i) for i in (0, 1))
#: A ROM's chain cell where the table has a 1: r' = r (N) | rs (W); without a chain above.
_READ_ONE = _table(lambda n, w: n | w)
_READ_FIRST_ONE = _table(lambda w: w)
#: A first-row gate: start (S) ? rdata (N) : v, by v.
_GATE = tuple(_table(lambda n, s, v: n if s else v, v=v) for v in (0, 1))
#: chain' = chain (W) & (address bit (N) == v), by v; and the chain's first cell.
_MATCH = tuple(_table(lambda n, w, v: w and n == v, v=v) for v in (0, 1))
_MATCH_FIRST = tuple(_table(lambda n, v: n == v, v=v) for v in (0, 1))


def register_file(words, width, read_ports=1, init=0, write_enable=True, shared_address=False,
                  abits=0, we_low=False, first_row=-1):
    """The register file block (module docstring).

    :param words: words (2 .. 4096); :param width: bits per word (1 .. 4096).
    :param read_ports: combinational read ports (1 .. 4).
    :param init: the initial contents: a sequence of ``words`` ints, or one int holding word
        ``i`` in bits ``i * width`` .. ``(i + 1) * width - 1`` (default all 0).
    :param write_enable: with a ``we`` input; without, every row writes.
    :param we_low: ``we`` is active low (a row writes when it is 0).
    :param first_row: with one read port, the value ``rdata`` shows in row 0 instead of a
        read (:func:`gate_first_row`; -1: none).
    :param abits: bits of ``waddr`` (0: :func:`address_bits`): a write past the last word
        writes nothing; ``raddr`` has :func:`address_bits` bits (a read past the end gives
        :func:`read_word`, which no wider address changes).
    :param shared_address: the first read port reads at the write address (a single-port
        RAM: no ``raddr``); its select chain runs on its row through the write decoder's
        address columns, one row (one subcycle) behind the write select, which is where the
        read wave must be.
    :returns: a :class:`~.block.Block` with ports ``we`` (1 bit, with ``write_enable``),
        ``waddr`` (:func:`address_bits`),
        ``wdata`` (width), then per read port ``p`` ``raddr``/``rdata`` (``raddr1``/``rdata1``
        ... after the first); inputs on the N side, read data on the S side; period 2.
    :raises LibraryError: for a box past :data:`~.basic.MAX_BLOCK_CELLS` or bad contents.
    """
    name = (f"register_file(words={words}, width={width}, read_ports={read_ports}"
            f"{'' if write_enable else ', write_enable=False'}"
            f"{', shared_address=True' if shared_address else ''}"
            f"{', we_low=True' if we_low and write_enable else ''}"
            f"{f', abits={abits}' if abits > address_bits(words) else ''})")
    # the write decoder compares every address bit (a write past the end does nothing); a
    # read never looks past address_bits(words) (read_word)
    R, n, nr = read_ports, max(abits, address_bits(words)), address_bits(words)
    shared = int(bool(shared_address))
    init = _contents(name, words, width, init)
    tile_w, tile_h = R + 2, R + 1
    decoder = 1 + n + nr * (R - shared)
    box_w, box_h = decoder + width * tile_w, words * tile_h
    check_box(name, box_w, box_h)
    outputs = {}                                      # (x, y) -> {side: table}

    put = functools.partial(_put, outputs)

    # read decoder r (1-based, not the shared one) occupies columns rd_col(r) .. + n - 1
    def rd_col(r):
        return 1 + n + (r - 1 - shared) * nr

    for word in range(words):
        y0 = word * tile_h
        for row in range(tile_h):
            y = y0 + row
            # write decoder: we, then waddr bits
            if not write_enable:
                if row == 0:
                    put(0, y, e=0xFFFF)                       # writes every row
            elif row == 0:
                put(0, y, s=COPY_N, e=COPY_N ^ 0xFFFF if we_low else COPY_N)
            else:
                put(0, y, s=COPY_N)
            for k in range(n):
                x = 1 + k
                if row == 0:
                    put(x, y, s=COPY_N, e=_MATCH[(word >> k) & 1])
                elif row == 1 and shared:                 # read port 1 at the write address
                    put(x, y, s=COPY_N,
                        e=_read_match(words, word, k) if k < nr else COPY_W)
                else:
                    put(x, y, s=COPY_N)
            # read decoders
            for r in range(1 + shared, R + 1):
                for k in range(nr):
                    x = rd_col(r) + k
                    if row == r:
                        put(x, y, s=COPY_N, e=_read_match(words, word, k))
                    elif row == 0 or row < r:
                        put(x, y, s=COPY_N, e=COPY_W)      # another select crosses
                    else:
                        put(x, y, s=COPY_N)
        # the array
        for bit in range(width):
            x0 = decoder + bit * tile_w
            i = (init[word] >> bit) & 1
            L, D = x0 + R, x0 + R + 1
            put(L, y0, e=COPY_W, s=_STORE[i])                     # A
            put(D, y0, e=COPY_W, w=COPY_N, s=COPY_N)              # data column
            for c in range(R):                                    # chains cross row 0
                put(x0 + c, y0, e=COPY_W, **({"s": COPY_N} if word else {}))
            for r in range(1, R + 1):
                y = y0 + r
                put(D, y, e=COPY_W, s=COPY_N)
                # q down the loop column: B (r = 1) keeps the loop
                put(L, y, e=COPY_W, w=COPY_N, **({"s": COPY_N} if r < R else {}),
                    **({"n": COPY_N} if r == 1 else {}))
                reader = x0 + R - r
                for c in range(R):
                    x = x0 + c
                    if x == reader:
                        put(x, y, e=COPY_W, s=(_READ if word else _READ_FIRST)[i])
                    elif x > reader:                               # q passes west
                        put(x, y, e=COPY_W, w=COPY_E,
                            **({"s": COPY_N} if _chain_live(word, R, c, r) else {}))
                    else:
                        put(x, y, e=COPY_W,
                            **({"s": COPY_N} if _chain_live(word, R, c, r) else {}))
    ports = [("we", "in", [(N, 0)])] if write_enable else []
    ports += [("waddr", "in", [(N, 1 + k) for k in range(n)]),
             ("wdata", "in", [(N, decoder + b * tile_w + R + 1) for b in range(width)])]
    for r in range(1, R + 1):
        suffix = "" if r == 1 else str(r - 1)
        if not (r == 1 and shared):
            ports.append((f"raddr{suffix}", "in", [(N, rd_col(r) + k) for k in range(nr)]))
        ports.append((f"rdata{suffix}", "out",
                      [(S, decoder + b * tile_w + R - r) for b in range(width)]))
    cells, box_h = _finish(outputs, box_w, box_h, ports)
    registers = {(decoder + b * tile_w + R, w * tile_h + 1, d)
                 for b in range(width) for w in range(words) for d in (N, W, S)}
    return _first_row(Block(name, box_w, box_h, cells, ports, registers=registers,
                 doc=f"A {words} x {width} register file, {R} combinational read "
                 f"port{'s' if R > 1 else ''}: row k's rdata is word raddr after the writes "
                 "of rows 0 .. k-1 (we, waddr, wdata; a write in row k is read from row "
                 "k + 1; past the last word a write does nothing, a read gives read_word()). Inputs "
                 "on N lanes, "
                 "read data on S lanes. A stored bit is a loop of two cells (one computes "
                 "q' = ws ? d : q, the other sends q back and on to the read chains) in a tile "
                 f"of {tile_w} x {tile_h}: the one-hot selects run along the rows, the write data "
                 "and the AND-OR read chains down the columns, the address decoders are a "
                 "column per address bit to the west."), first_row, R)


def rom(words, width, init=-1, read_ports=1, first_row=-1):
    """A read-only memory of ``words`` x ``width`` bits: ``rdata = table[raddr]`` on each of
    ``read_ports`` combinational ports, period 2. The register file's read side without its
    storage: per word one row per port carrying the port's one-hot select east, per bit one
    column per port carrying its AND-OR chain south, each chain cell ``r | rs`` where the
    table has a 1 and a crossing where it has a 0 (one cell a bit with one port), and a
    decoder column per address bit and port to the west.

    :param init: the table: a sequence of ``words`` ints or one int (word ``i`` in bits
        ``i * width`` ..), as :func:`register_file`'s; -1: word ``i`` holds ``i`` (modulo
        ``2**width``).
    :param first_row: with one read port, the value ``rdata`` shows in row 0 instead of a
        read (:func:`gate_first_row`; -1: none).
    :returns: a :class:`~.block.Block`: per port ``raddr`` (N lanes, :func:`address_bits`:
        past the last word a read gives :func:`read_word`) and ``rdata`` (S lanes),
        ``raddr1``/``rdata1`` ... after the first.
    :raises LibraryError: for a box past :data:`~.basic.MAX_BLOCK_CELLS`, a bad table or
        one of zeros only.
    """
    name = f"rom(words={words}, width={width}, read_ports={read_ports})"
    R, n = read_ports, address_bits(words)
    if isinstance(init, int) and init == -1:
        init = [i % (1 << width) for i in range(words)]
    init = _contents(name, words, width, init)
    if not any(init):
        raise LibraryError(f"Macro {name}: the table is all 0, so is every read: no block "
                           "needed (a constant)")
    decoder = R * n
    box_w, box_h = decoder + width * R, words * R
    check_box(name, box_w, box_h)
    outputs = {}

    put = functools.partial(_put, outputs)

    for word in range(words):
        for row in range(R):                      # row r - 1 carries port r's select
            y, port = word * R + row, row + 1
            for r in range(1, R + 1):
                for k in range(n):
                    x = (r - 1) * n + k
                    if r == port:
                        put(x, y, s=COPY_N, e=_read_match(words, word, k))
                    elif r > port:
                        put(x, y, s=COPY_N, e=COPY_W)      # port's select crosses
                    else:
                        put(x, y, s=COPY_N)
            for bit in range(width):
                x0 = decoder + bit * R
                one = (init[word] >> bit) & 1
                for c in range(R):                        # column c: port R - c's chain
                    chain = R - c
                    if chain == port:
                        if one:
                            put(x0 + c, y, e=COPY_W,
                                s=_READ_FIRST_ONE if word == 0 else _READ_ONE)
                        else:
                            put(x0 + c, y, e=COPY_W, **({"s": COPY_N} if word else {}))
                    else:
                        live = word > 0 or row > chain - 1
                        put(x0 + c, y, e=COPY_W, **({"s": COPY_N} if live else {}))
    ports = []
    for r in range(1, R + 1):
        suffix = "" if r == 1 else str(r - 1)
        ports.append((f"raddr{suffix}", "in", [(N, (r - 1) * n + k) for k in range(n)]))
        ports.append((f"rdata{suffix}", "out",
                      [(S, decoder + b * R + R - r) for b in range(width)]))
    cells, box_h = _finish(outputs, box_w, box_h, ports)
    return _first_row(Block(name, box_w, box_h, cells, ports,
                 doc=f"A {words} x {width} read-only memory, {R} combinational read "
                 f"port{'s' if R > 1 else ''}: rdata is the table's word raddr (past the last word "
                 "read_word()). One-hot selects along the rows, one AND-OR chain per bit and "
                 "port down the columns (a cell a bit with one port), the decoders a column per "
                 "address bit to the west."), first_row, R)


def _contents(name, words, width, init):
    """``init`` (a sequence of ``words`` ints, or one int, word ``i`` in bits ``i * width``
    ..) as a list of ints. :raises LibraryError: if it does not fit."""
    if isinstance(init, int):
        if not 0 <= init < 1 << (words * width):
            raise LibraryError(f"Macro {name}: init needs {words} words of {width} bits "
                               f"({words * width} bits in all)")
        return [(init >> (i * width)) & ((1 << width) - 1) for i in range(words)]
    init = [int(v) for v in init]
    if len(init) != words or any(not 0 <= v < (1 << width) for v in init):
        raise LibraryError(f"Macro {name}: init needs {words} words of {width} bits")
    return init


def _chain_live(word, R, c, r):
    """Whether the read chain in column ``c`` of a tile carries a value at tile row ``r``:
    port ``R - c``'s chain starts at its reader (row ``R - c``) of word 0."""
    return word > 0 or r > R - c


def _put(outputs, x, y, **tables):
    """Set outputs of cell ``(x, y)`` in ``outputs`` ({(x, y): {side: table}}), each given
    by its side's letter (``n=``, ``e=``, ``s=``, ``w=``) as a 16-bit LUT."""
    cell = outputs.setdefault((x, y), {})
    for side, table in tables.items():
        cell[{"n": N, "e": E, "s": S, "w": W}[side]] = table


def _finish(outputs, box_w, box_h, ports):
    """``(cells, height)``: the tables of ``outputs`` in a box made even-high
    (:func:`_even_height`) and pruned (:func:`_prune`), the read data (the ``"out"`` ports
    of ``ports``, S lanes) kept."""
    box_h = _even_height(outputs, box_h, ports)
    out_lanes = {(x, box_h - 1) for _, direction, bits in ports if direction == "out"
                 for _, x in bits}
    return _prune(outputs, box_w, box_h, out_lanes), box_h


def _even_height(outputs, box_h, ports):
    """The box height made even: an odd box's N inputs and S outputs could not both touch
    the edges of a grid (even, SPEC section 1), so the read data pass one cell further
    down. Adds those pass cells to ``outputs``; returns the height."""
    if box_h % 2 == 0:
        return box_h
    for _, direction, bits in ports:
        if direction == "out":
            for _, x in bits:
                outputs.setdefault((x, box_h), {})[S] = COPY_N
    return box_h + 1


def _prune(outputs, box_w, box_h, out_cells):
    """``{(x, y): (N, E, S, W)}`` from ``outputs`` ({(x, y): {side: table}}) without the
    outputs that leave the box (but the S outputs of ``out_cells``, the read data) and then,
    repeatedly, without those no LUT reads (the passes after the last word and bit)."""
    tables = {xy: [sides.get(d, 0) for d in DIRECTIONS] for xy, sides in outputs.items()}

    def read(x, y, d):
        dx, dy = d.step
        nx, ny = x + dx, y + dy
        if not (0 <= nx < box_w and 0 <= ny < box_h):
            return d == S and (x, y) in out_cells
        other = tables.get((nx, ny))
        return other is not None and any(d.opposite in support(t) for t in other)

    changed = True
    while changed:
        changed = False
        for (x, y), t in tables.items():
            for d in DIRECTIONS:
                if t[d] and not read(x, y, d):
                    t[d] = 0
                    changed = True
    return {xy: tuple(t) for xy, t in tables.items() if any(t)}


def _first_row(block, value, read_ports):
    """``block`` with ``rdata`` gated to ``value`` in row 0 (:func:`gate_first_row`), or
    itself for ``value`` -1."""
    if value < 0:
        return block
    if read_ports != 1:
        raise LibraryError(f"Macro {block.name}: first_row needs one read port")
    return gate_first_row(block, "rdata", value)


def gate_first_row(block, port, values):
    """``block`` with its output ``port`` (a read port on the S side, lanes stepping as the
    read chains do) showing ``values`` in row 0 and its own read from row 1 on: the read of a
    registered port whose register starts at ``values`` (the compiler applies every input a
    row later, so row 0 would otherwise show a read of address 0 before any row).

    A gate row under the read data computes ``start ? rdata : value`` per bit, ``start`` from
    the row below it, where a wire from a constant-1 cell ``K`` in a new column 0 runs east
    (and the gated data pass down through it). ``K`` first updates at subcycle ``p`` (its
    parity), so a cell ``D`` hops on outputs 1 from ``p + D``, and a gate reading at ``t``
    sees 1 iff ``t >= p + D``; a gate computing row 0 at ``G`` must see 0 there and 1 at
    ``G + 2``, so ``D = G + 2 - p``: ``K`` sits as far up column 0 as that takes.

    :param values: the value of ``port`` in row 0 (an int, bit ``i`` for port bit ``i``).
    :returns: a new :class:`~.block.Block` (one column wider, two or three rows taller).
    :raises LibraryError: if the port is not all on the S side, its lanes do not step with
        their timing, or the wire does not fit above the gate row.
    """
    target = block.port(port)
    if any(bit.side != S for bit in target.bits):
        raise LibraryError(f"Macro {block.name}: {port} is not on the S side")
    g = block.height
    gates = {bit.lane + 1: (values >> i) & 1 for i, bit in enumerate(target.bits)}
    last = max(gates)

    def build(k_row):
        """The block with K at (0, k_row) (None: no wire, for the gates' times)."""
        add = {}
        for x, v in gates.items():
            add[(x, g)] = {S: _GATE[v]}
        for x in range(1, last + 1):
            add[(x, g + 1)] = {**({E: COPY_W} if x < last else {}),
                               **({N: COPY_W, S: COPY_N} if x in gates else {})}
        if k_row is not None:
            if k_row == g + 1:
                add[(0, g + 1)] = {E: 0xFFFF}
            else:
                add[(0, k_row)] = {S: 0xFFFF}
                for y in range(k_row + 1, g + 1):
                    add[(0, y)] = {S: COPY_N}
                add[(0, g + 1)] = {E: COPY_N}
        height = g + 2
        if height % 2:
            for x in gates:
                add[(x, height)] = {S: COPY_N}
            height += 1
        cells = {(x + 1, y): t for (x, y), t in block.cells.items()}
        for xy, sides in add.items():
            cells[xy] = tuple(sides.get(d, 0) for d in DIRECTIONS)
        ports = [(p.name, p.direction,
                  [(b.side, b.lane + (1 if b.side in (N, S) else 0)) for b in p.bits],
                  p.signed) for p in block.ports]
        registers = {(x + 1, y, d) for (x, y, d) in block.registers}
        return Block(block.name + f" with {port} {values} in row 0", block.width + 1, height,
                     cells, ports, registers=registers, doc=block.doc)

    plain = build(None)
    first = min(gates)
    arrival = plain.times[(first, g, S)] + 2            # G + 2 = p + D
    for x in gates:                                      # one wire for every bit
        if plain.times[(x, g, S)] - plain.times[(first, g, S)] != x - first:
            raise LibraryError(f"Macro {block.name}: the lanes of {port} do not step with "
                               "their timing; no one start wire gates them")
    for k_row in range(g + 1, -1, -1):
        if k_row % 2 + (g + 1 - k_row) + first + 1 == arrival:
            return build(k_row)
    raise LibraryError(f"Macro {block.name}: the start wire of {port} does not fit above "
                       "its gate row")
