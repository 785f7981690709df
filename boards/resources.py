"""How large a grid a board holds, estimated from the measured costs (:func:`max_grid`,
:func:`grid_needs`, :func:`check_fits`): the one resource model that ``bitgrid boards`` shows and
``bitgrid build`` checks a ``--size`` against before any tool runs.

A grid of ``cells`` cells with ``links`` link sides costs, per resource,
``fixed + per_cell * cells + per_link * links`` (:data:`CELL_COSTS`, by FPGA family and
storage), against the board's :attr:`~bitgrid.boards.Board.capacity` times the share of it that
can be used (:data:`USABLE`). The figures (``docs/boards.md``, "Measured builds", and
``docs/resources.md``):

* iCE40 UP5K: about 140 logic cells a cell (78 LUT4 and 68 FFs; the 64 configuration FFs each
  need a logic cell); 6 x 4 used 4,860 of the 5,280 logic cells, so the host controller and the
  rest are about 1,500; a link side (PHY and link layer) about 1,200 (``docs/two-boards.md``);
* ECP5 with LUT memory: 12.86 LUT4 a cell and 1,890 besides (the ULX3S-85F builds at 32 x 32,
  15,059 LUT4, and 64 x 64, 54,558 LUT4), one TRELLIS_RAMW a cell; with flip-flops 143 LUT4 a
  cell (synthesis of an 8 x 8 grid);
* Gowin with LUT memory: 19 LUT4 a cell and 791 besides (the Tang Nano 9K at 16 x 14, 5,041
  LUT4, and 16 x 16, 5,648), one RAM16SDP4 a cell, of which nextpnr-himbaechel places at most
  224 of 270 (83 %: 224 placed; 256, and 240 with a flip-flop row, did not); with flip-flops about 85 LUT4 and 70.5 FFs a
  cell (``synth_gowin -nowidelut``: a 4 x 4 pipelined grid synthesised; with wide LUTs it was
  about 430). Flip-flops as nextpnr-himbaechel counts them: 1,449 besides the cells, 68 a
  flip-flop cell, 10 a LUT-RAM cell (its 4 outputs and the 6 DFF positions of the CFU its
  RAM16SDP4 takes), from the 16 x 16 build with two flip-flop rows (5,865 of 6,480: it failed
  in placement, so 85 % is the usable share). The Tang Nano 9K's platform allows 224 RAM16SDP4
  (``lut_ram_sites``, the most that placed): the rows beyond them are costed as flip-flop rows
  (:func:`bitgrid.hdl.grid.rows_in_lut_ram`), so 16 x 16 is 224 LUT-RAM cells and 32
  flip-flop cells, refused by the flip-flops.

These are estimates: the largest grids built so far (iCEBreaker 6 x 4, Tang Nano 9K 16 x 14,
ULX3S-12F 24 x 24, ULX3S-85F 64 x 64) are within them, and a build of a larger grid is refused
unless forced, since place and route would run for minutes into "no BELs remaining".
"""

import typing

from bitgrid.hdl.grid import rows_in_lut_ram

__all__ = ["Cost", "CELL_COSTS", "USABLE", "GridTooLargeError", "grid_needs", "check_fits",
           "max_grid", "RESOURCE_NAMES"]


class Cost(typing.NamedTuple):
    """The cost of one resource: ``fixed + per_cell * cells + per_link * link sides``."""
    per_cell: float
    fixed: float = 0
    per_link: float = 0

    def of(self, cells, links=0):
        return self.fixed + self.per_cell * cells + self.per_link * links


#: (family, storage) -> resource -> :class:`Cost`.
CELL_COSTS = {
    ("ice40", "ff"): {"LC": Cost(140, 1500, 1200)},
    ("ice40", "memory"): {"LC": Cost(140, 1500, 1200)},     # Yosys maps it to the same FFs
    ("ecp5", "memory"): {"LUT4": Cost(12.86, 1890, 1200), "RAMW": Cost(1)},
    ("ecp5", "ff"): {"LUT4": Cost(143, 1890, 1200)},
    ("gowin", "memory"): {"LUT4": Cost(19, 791, 1200), "RAM16SDP4": Cost(1),
                          "FF": Cost(10, 1449)},
    ("gowin", "ff"): {"LUT4": Cost(85, 791, 1200), "FF": Cost(68, 1449)},
}

#: Resource -> the share of it place and route can use (1.0 if not listed).
USABLE = {"RAM16SDP4": 224 / 270, "FF": 0.85}      # the most RAM16SDP4 that placed

#: Resource -> its name in messages.
RESOURCE_NAMES = {"LC": "logic cells", "LUT4": "LUT4", "RAMW": "LUT-RAM sites (TRELLIS_RAMW)",
                  "RAM16SDP4": "LUT-RAM sites (RAM16SDP4)", "FF": "flip-flops"}


class GridTooLargeError(ValueError):
    """A grid size that does not fit a board by :func:`grid_needs`; the message names the
    resource, the estimate and the largest grid that fits."""


def _board(board):
    from . import get_board
    return get_board(board)


def grid_needs(board, size, *, storage=None, links=0):
    """The resources a grid of ``size`` needs on ``board``, by the estimate above.

    :param size: ``(width, height)`` in cells.
    :param storage: ``"ff"`` or ``"memory"`` (default: the board's).
    :param links: how many link sides the board top has.
    :returns: ``{resource: (needed, usable)}``, both in the resource's units (rounded).
    :raises ValueError: for a storage with no measured cost on the board's family.
    """
    board = _board(board)
    storage = storage or board.storage
    width, height = size
    # The rows the grid builds in each kind on this board (LUT-RAM rows beyond the platform's
    # lut_ram_sites are flip-flops: bitgrid.hdl.grid.rows_in_lut_ram).
    kinds = rows_in_lut_ram((storage,) * height, width,
                            getattr(board.platform, "lut_ram_sites", None))
    cells = {kind: width * kinds.count(kind) for kind in sorted(set(kinds))}
    try:
        costs = {kind: CELL_COSTS[board.family, kind] for kind in cells}
    except KeyError:
        raise ValueError(f"no resource estimate for {storage!r} storage on "
                         f"{board.family}") from None
    needs = {}
    for kind, count in cells.items():
        for name, cost in costs[kind].items():
            fixed, per_cell = needs.get(name, (0, 0))
            needs[name] = (max(fixed, cost.fixed + cost.per_link * links),
                           per_cell + cost.per_cell * count)
    return {name: (round(fixed + per_cell),
                   int(board.capacity[name] * USABLE.get(name, 1.0)))
            for name, (fixed, per_cell) in needs.items() if name in board.capacity}


def max_grid(board, *, storage=None, links=0):
    """The largest grid estimated to fit ``board``: the largest ``(width, height)`` with even
    sides, ``height`` equal to ``width`` or two less, whose :func:`grid_needs` fit (6 x 4 on
    the iCEBreaker, 16 x 14 on the Tang Nano 9K), or None if not even 2 x 2 fits."""
    best = None
    width = 2
    while True:
        fitted = False
        for height in (width, width - 2):
            if height >= 2 and _fits(board, (width, height), storage, links):
                best, fitted = (width, height), True
                break
        if not fitted:
            return best
        width += 2


def _fits(board, size, storage, links):
    return all(need <= have for need, have in
               grid_needs(board, size, storage=storage, links=links).values())


def check_fits(board, size, *, storage=None, links=0):
    """Check that a grid of ``size`` fits ``board`` by the estimate.

    :raises GridTooLargeError: naming the resource that runs out and :func:`max_grid`.
    """
    board = _board(board)
    for name, (need, have) in grid_needs(board, size, storage=storage, links=links).items():
        if need > have:
            largest = max_grid(board, storage=storage, links=links)
            fit = (f"the largest estimated to fit is {largest[0]}x{largest[1]}" if largest
                   else "not even 2x2 fits")
            share = "" if USABLE.get(name, 1.0) == 1.0 else \
                f" (the {USABLE[name]:.0%} of {board.capacity[name]} that place and route uses)"
            link = f" with {links} link side(s)" if links else ""
            raise GridTooLargeError(
                f"a grid of {size[0]}x{size[1]} cells{link} does not fit the {board.name}: it needs about "
                f"{need} {RESOURCE_NAMES.get(name, name)}, the board has {have}{share}; "
                f"{fit} (bitgrid boards); use a smaller --size, or --force to try anyway")
