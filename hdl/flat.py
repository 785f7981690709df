"""The grid's cells as one flat Verilog module: the form event-driven simulators run fast.

A :class:`~bitgrid.hdl.grid.Grid` built with ``cells="flat"`` has no cell modules: its cells
are one Verilog module, written here, with one 4-bit output register per cell, one memory of
16 words per cell (``lut``, word ``16 k + a`` for cell ``k = y * W + x``: bit ``d`` is bit
``a`` of ``LUT[d]``, the word view of SPEC section 3) and one ``always`` block. A subcycle is
one statement per cell of the running parity, ``o_<x>_<y> <= lut[{k, address}]``, where the
address is a wire of the four neighbour outputs (``N | E << 1 | S << 2 | W << 3``). Icarus
Verilog then runs a cell update in a memory read and a register write, with no per-cell
multiplexer between the LUT and the readback, no per-cell enable logic, and nothing evaluated
in a cell whose neighbours did not change; the cell modules cost it about 9 us per cell and
clock (``docs/performance.md``). It is the same machine (SPEC sections 3, 4 and 7):
``tests/hdl/test_flat.py`` proves it equal to the grid of :class:`~bitgrid.hdl.cell.Cell`
modules with Yosys, and the conformance cases run on it on Icarus.

Module ports (``W``, ``H`` the grid size)
    ``clk``, ``rst`` (sync reset: every output to 0, not the configuration); ``en_0``,
    ``en_1``: the parity enables (cells with ``(x + y) % 2 == p`` update on a clock edge
    where ``en_p`` is high); ``cfg_we``, ``cfg_row``, ``cfg_addr``, ``cfg_data`` (``4 W``
    bits): on a clock edge where ``cfg_we`` is high, bits ``4 x .. 4 x + 3`` of ``cfg_data``
    become word ``cfg_addr`` of cell ``(x, cfg_row)`` (no write for a row ``>= H``); ``i_n``,
    ``i_e``, ``i_s``, ``i_w``, ``o_n``, ... the edge buses (SPEC section 2); ``rframe``
    (``4 W`` bits, combinational): the frame at ``cfg_row`` and ``cfg_addr`` (0 for a row
    ``>= H``, as the cell grid's readback multiplexer reads it); with ``state``,
    ``state`` (``4 W H`` bits, the layout of :class:`~bitgrid.hdl.grid.Grid` ``.state``).

The readback reads the configuration at ``cfg_addr`` whether or not the grid steps, while the
cell grid shares each cell's read multiplexer between its LUT and the readback; the port's
contract (:class:`~bitgrid.hdl.grid.ConfigSignature`: ``r_data`` holds the frame in a cycle
after one without a step) is the same for both.
"""

import hashlib

from amaranth.hdl import ClockSignal, Instance, ResetSignal

from bitgrid.config import Configuration, check_grid_size

__all__ = ["flat_module_name", "flat_instance", "flat_verilog"]


def flat_module_name(width, height, init=None):
    """Verilog module name of the flat cells of a ``width`` x ``height`` grid:
    ``bitgrid_flat_<W>x<H>``, and for a power-up configuration ``init`` (a
    :class:`~bitgrid.Configuration` other than all-zero) ``_<16 hex digits of its SHA-256>``."""
    name = f"bitgrid_flat_{width}x{height}"
    if init is not None and init.luts.any():
        name += "_" + hashlib.sha256(init.luts.astype("<u2").tobytes()).hexdigest()[:16]
    return name


def flat_instance(width, height, init, *, en, cfg_we, cfg_row, cfg_addr, cfg_data, i, o,
                  rframe, state=None):
    """An :class:`amaranth.hdl.Instance` of :func:`flat_module_name` in the ``sync`` domain:
    ``en`` the two parity enables, ``i`` and ``o`` the grid's edge buses (members ``n``,
    ``e``, ``s``, ``w``), ``rframe`` a ``4 * width``-bit signal, ``state`` a ``4 * width *
    height``-bit signal or None (the module's ports are in the module docstring)."""
    ports = dict(i_clk=ClockSignal("sync"), i_rst=ResetSignal("sync"), i_en_0=en[0],
                 i_en_1=en[1], i_cfg_we=cfg_we, i_cfg_row=cfg_row, i_cfg_addr=cfg_addr,
                 i_cfg_data=cfg_data, o_rframe=rframe)
    for side in "nesw":
        ports[f"i_i_{side}"] = getattr(i, side)
        ports[f"o_o_{side}"] = getattr(o, side)
    if state is not None:
        ports["o_state"] = state
    return Instance(flat_module_name(width, height, init), **ports)


def flat_verilog(width, height, *, init=None, state=False):
    """Verilog source (``str``) of the flat cells of a ``width`` x ``height`` grid
    (:func:`flat_module_name`; ports in the module docstring) with the power-up configuration
    ``init`` (a :class:`~bitgrid.Configuration` of that size; default, or all zero: all cells
    unconfigured, the same module) and, with ``state``, the ``state`` output. Verilog-2005.

    :raises GridSizeError: for a size SPEC section 1 does not allow.
    :raises TypeError, ValueError: for an ``init`` that is not a Configuration of that size.
    """
    w, h = check_grid_size(width, height)
    if init is not None:
        if not isinstance(init, Configuration):
            raise TypeError(f"init must be a Configuration, not {init!r}")
        if (init.width, init.height) != (w, h):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {w} x {h}")
    n = w * h
    row_bits = max(1, (h - 1).bit_length())
    cell_bits = max(1, (n - 1).bit_length())

    def out(x, y, d):
        return f"o_{x}_{y}[{d}]"

    def source(x, y, d):
        """The signal on input ``d`` of cell (x, y): a neighbour's output or an edge lane."""
        if d == 0:
            return out(x, y - 1, 2) if y > 0 else f"i_n[{x}]"
        if d == 1:
            return out(x + 1, y, 3) if x < w - 1 else f"i_e[{y}]"
        if d == 2:
            return out(x, y + 1, 0) if y < h - 1 else f"i_s[{x}]"
        return out(x - 1, y, 1) if x > 0 else f"i_w[{y}]"

    def concat(items):
        return "{" + ", ".join(items) + "}"

    cells = [(x, y) for y in range(h) for x in range(w)]
    lines = [f"module {flat_module_name(w, h, init)}(clk, rst, en_0, en_1, cfg_we, cfg_row, "
             f"cfg_addr, cfg_data, i_n, i_e, i_s, i_w, o_n, o_e, o_s, o_w, rframe"
             f"{', state' if state else ''});",
             "  input clk, rst, en_0, en_1, cfg_we;",
             f"  input [{row_bits - 1}:0] cfg_row;",
             "  input [3:0] cfg_addr;",
             f"  input [{4 * w - 1}:0] cfg_data;",
             f"  input [{w - 1}:0] i_n, i_s;",
             f"  input [{h - 1}:0] i_e, i_w;",
             f"  output [{w - 1}:0] o_n, o_s;",
             f"  output [{h - 1}:0] o_e, o_w;",
             f"  output [{4 * w - 1}:0] rframe;"]
    if state:
        lines.append(f"  output [{4 * n - 1}:0] state;")
    lines += [f"  // Configuration: word 16 k + a is word a of cell k = y * {w} + x.",
              f"  reg [3:0] lut [0:{16 * n - 1}];",
              "  integer word;",
              "  initial begin",
              f"    for (word = 0; word < {16 * n}; word = word + 1) lut[word] = 4'h0;"]
    if init is not None:
        for k, (x, y) in enumerate(cells):
            value = init.word(x, y)
            for a in range(16):
                nibble = (value >> (4 * a)) & 0xF
                if nibble:
                    lines.append(f"    lut[{16 * k + a}] = 4'h{nibble:x};")
    lines.append("  end")
    lines += ["  // Outputs and LUT addresses (N | E << 1 | S << 2 | W << 3) of every cell."]
    for x, y in cells:
        lines.append(f"  reg [3:0] o_{x}_{y} = 4'h0;")
    for x, y in cells:
        lines.append(f"  wire [3:0] a_{x}_{y} = "
                     f"{concat(source(x, y, d) for d in (3, 2, 1, 0))};")
    lines += ["  always @(posedge clk) begin",
              "    if (rst) begin",
              *(f"      o_{x}_{y} <= 4'h0;" for x, y in cells),
              "    end else begin"]
    for parity in (0, 1):
        lines.append(f"      if (en_{parity}) begin")
        lines += [f"        o_{x}_{y} <= lut[{{{cell_bits}'d{k}, a_{x}_{y}}}];"
                  for k, (x, y) in enumerate(cells) if (x + y) % 2 == parity]
        lines.append("      end")
    lines += ["    end",
              f"    if (cfg_we && cfg_row < {h}) begin",
              *(f"      lut[(cfg_row * {w} + {x}) * 16 + cfg_addr] <= "
                f"cfg_data[{4 * x + 3}:{4 * x}];" for x in range(w)),
              "    end",
              "  end"]
    # Readback: the frame at cfg_row and cfg_addr (0 for rows >= H). Continuous assignments:
    # Icarus compiles an always @* that reads the memory for minutes at 32 x 32.
    lines += [f"  assign rframe[{4 * x + 3}:{4 * x}] = cfg_row < {h} ? "
              f"lut[(cfg_row * {w} + {x}) * 16 + cfg_addr] : 4'h0;" for x in range(w)]
    # Edge outputs (SPEC section 2) and the state.
    lines += [f"  assign o_n = {concat(out(x, 0, 0) for x in reversed(range(w)))};",
              f"  assign o_s = {concat(out(x, h - 1, 2) for x in reversed(range(w)))};",
              f"  assign o_e = {concat(out(w - 1, y, 1) for y in reversed(range(h)))};",
              f"  assign o_w = {concat(out(0, y, 3) for y in reversed(range(h)))};"]
    if state:
        lines.append(f"  assign state = {concat(f'o_{x}_{y}' for x, y in reversed(cells))};")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"
