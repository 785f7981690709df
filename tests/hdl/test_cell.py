# amaranth: UnusedElaboratable=no
"""The gateware cell (``bitgrid.hdl.cell.Cell``, SPEC section 3): constructor checks, then
simulation of both storage back ends against the reference conversion in ``bitgrid.cell``."""

import random

import pytest
from amaranth.hdl import Fragment, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.cell import PASS_THROUGH, REFLECTOR, tables_to_word, word_to_tables
from bitgrid.hdl.cell import Cell
from bitgrid.terms import STORAGES
from support.gateware import raises_exactly, simulate

PASS_THROUGH_WORD = 0xFB73EA62D951C840   # SPEC section 3
REFLECTOR_WORD = 0xFEDCBA9876543210


def expected_outputs(word, address):
    """The cell's 4 outputs (bit d = output d) for LUT address ``address``, computed from the
    table view that ``bitgrid.cell.word_to_tables`` gives (bit ``address`` of LUT[d])."""
    tables = word_to_tables(word)
    return sum(((tables[d] >> address) & 1) << d for d in range(4))


def word_view(word, address):
    """Word ``address`` of the 16 x 4 memory: bits 4a .. 4a+3 of the 64-bit word."""
    return (word >> (4 * address)) & 0xF


# --- Constructor ---------------------------------------------------------------------------------

class TestConstructor:
    def test_defaults(self):
        dut = Cell()
        assert dut.storage == "ff"
        assert dut.init == 0
        Fragment.get(dut, None)   # elaborates

    @pytest.mark.parametrize("storage", STORAGES)
    def test_parameters(self, storage):
        dut = Cell(storage=storage, init=PASS_THROUGH_WORD)
        assert dut.storage == storage
        assert dut.init == PASS_THROUGH_WORD
        Fragment.get(dut, None)

    def test_signature(self):
        dut = Cell()
        assert dut.signature.members == wiring.Signature({
            "i": In(4), "o": Out(4), "en": In(1),
            "cfg_addr": In(4), "cfg_data": In(4), "cfg_we": In(1), "cfg_rdata": Out(4),
        }).members
        Fragment.get(dut, None)

    @pytest.mark.parametrize("storage", ["lutram", "FF", None, 0])
    def test_wrong_storage(self, storage):
        with raises_exactly(ValueError, f"Storage must be one of 'ff', 'memory', 'latch', "
                                        f"not {storage!r}"):
            Cell(storage=storage)

    @pytest.mark.parametrize("init", [-1, 1 << 64, "0x1234", 1.0])
    def test_wrong_init(self, init):
        with raises_exactly(ValueError, f"A cell's word view must be an integer from 0 to "
                                        f"{2**64 - 1}, not {init!r}"):
            Cell(init=init)

    def test_keyword_only(self):
        message = "Cell.__init__() takes 1 positional argument but 2 were given"
        with raises_exactly(TypeError, message):
            Cell("ff")

    def test_spec_constants(self):
        """The SPEC's two views of the reference cells agree with the conversion under test."""
        assert tables_to_word(PASS_THROUGH) == PASS_THROUGH_WORD
        assert PASS_THROUGH == (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)
        assert tables_to_word(REFLECTOR) == REFLECTOR_WORD
        assert REFLECTOR == (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)


# --- Simulation ----------------------------------------------------------------------------------

async def lut_sweep(ctx, dut):
    """Drive every address with ``en`` high and return the 16 registered outputs."""
    result = []
    ctx.set(dut.en, 1)
    for address in range(16):
        ctx.set(dut.i, address)
        await ctx.tick()
        result.append(ctx.get(dut.o))
    ctx.set(dut.en, 0)
    return result


@pytest.mark.parametrize("storage", STORAGES)
class TestSimulation:
    def test_random_init_exhaustive(self, storage):
        """Random configurations (seeded): for all 16 addresses, the outputs are bit d of word
        a, as the table view of bitgrid.cell says."""
        rng = random.Random(0xCE11)
        words = [rng.getrandbits(64) for _ in range(6)] + [0, (1 << 64) - 1]
        for word in words:
            dut = Cell(storage=storage, init=word)
            seen = []

            async def testbench(ctx):
                assert ctx.get(dut.o) == 0           # outputs are 0 before the first update
                seen.extend(await lut_sweep(ctx, dut))

            simulate(dut, testbench, name=f"cell_{storage}_{word:016x}")
            assert seen == [expected_outputs(word, a) for a in range(16)]
            assert seen == [word_view(word, a) for a in range(16)]

    def test_pass_through(self, storage):
        """Every signal continues straight on: output N = input S, E = W, S = N, W = E."""
        dut = Cell(storage=storage, init=PASS_THROUGH_WORD)
        seen = []

        async def testbench(ctx):
            seen.extend(await lut_sweep(ctx, dut))

        simulate(dut, testbench, name=f"cell_{storage}_pass")
        for a, out in enumerate(seen):
            n, e, s, w = a & 1, a >> 1 & 1, a >> 2 & 1, a >> 3 & 1
            assert out == s | w << 1 | n << 2 | e << 3, f"address {a}"

    def test_reflector(self, storage):
        """Each output echoes the input on its own side."""
        dut = Cell(storage=storage, init=REFLECTOR_WORD)
        seen = []

        async def testbench(ctx):
            seen.extend(await lut_sweep(ctx, dut))

        simulate(dut, testbench, name=f"cell_{storage}_reflect")
        assert seen == list(range(16))

    def test_enable_low_holds(self, storage):
        """Outputs change only on edges where en is high; latency one cycle."""
        dut = Cell(storage=storage, init=REFLECTOR_WORD)

        async def testbench(ctx):
            ctx.set(dut.i, 0b0101)
            ctx.set(dut.en, 1)
            assert ctx.get(dut.o) == 0               # registered: nothing before the edge
            await ctx.tick()
            assert ctx.get(dut.o) == 0b0101
            ctx.set(dut.en, 0)
            for address in (0b1010, 0b1111, 0b0000):
                ctx.set(dut.i, address)
                await ctx.tick()
                assert ctx.get(dut.o) == 0b0101
            ctx.set(dut.i, 0b1010)
            ctx.set(dut.en, 1)
            await ctx.tick()
            assert ctx.get(dut.o) == 0b1010

        simulate(dut, testbench, name=f"cell_{storage}_en")

    def test_config_write_and_readback(self, storage):
        """Words written through cfg_we read back through cfg_rdata (with en low) and drive
        the LUTs; the init configuration is readable before any write."""
        rng = random.Random(7)
        init = rng.getrandbits(64)
        word = rng.getrandbits(64)
        dut = Cell(storage=storage, init=init)
        readback_init, readback, outputs = [], [], []

        async def testbench(ctx):
            ctx.set(dut.en, 0)
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                readback_init.append(ctx.get(dut.cfg_rdata))   # combinational read
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                ctx.set(dut.cfg_data, word_view(word, a))
                ctx.set(dut.cfg_we, 1)
                await ctx.tick()
            ctx.set(dut.cfg_we, 0)
            ctx.set(dut.cfg_data, 0)
            assert ctx.get(dut.o) == 0                   # writes leave the outputs alone
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                readback.append(ctx.get(dut.cfg_rdata))
            outputs.extend(await lut_sweep(ctx, dut))

        simulate(dut, testbench, name=f"cell_{storage}_cfg")
        assert readback_init == [word_view(init, a) for a in range(16)]
        assert readback == [word_view(word, a) for a in range(16)]
        assert outputs == [expected_outputs(word, a) for a in range(16)]

    def test_write_enable_low_writes_nothing(self, storage):
        dut = Cell(storage=storage, init=REFLECTOR_WORD)
        readback = []

        async def testbench(ctx):
            ctx.set(dut.cfg_we, 0)
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                ctx.set(dut.cfg_data, ~a & 0xF)
                await ctx.tick()
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                readback.append(ctx.get(dut.cfg_rdata))

        simulate(dut, testbench, name=f"cell_{storage}_nowe")
        assert readback == list(range(16))

    def test_write_during_update(self, storage):
        """A write in a cycle where en is high takes effect at that edge: the update of the
        same edge still uses the old word, the next one the new word (both back ends)."""
        dut = Cell(storage=storage, init=REFLECTOR_WORD)

        async def testbench(ctx):
            ctx.set(dut.i, 0b0110)
            ctx.set(dut.en, 1)
            ctx.set(dut.cfg_addr, 0b0110)
            ctx.set(dut.cfg_data, 0b1001)
            ctx.set(dut.cfg_we, 1)
            await ctx.tick()
            assert ctx.get(dut.o) == 0b0110
            ctx.set(dut.cfg_we, 0)
            await ctx.tick()
            assert ctx.get(dut.o) == 0b1001

        simulate(dut, testbench, name=f"cell_{storage}_wen")

    def test_reset_keeps_configuration(self, storage):
        """Sync reset clears the outputs but neither the init words nor written words."""
        rng = random.Random(11)
        init = rng.getrandbits(64)
        new_word = rng.getrandbits(64)
        dut = Cell(storage=storage, init=init)
        rst = Signal()
        after = {}

        async def testbench(ctx):
            # Rewrite only the upper 8 words; the lower 8 keep the init configuration.
            for a in range(8, 16):
                ctx.set(dut.cfg_addr, a)
                ctx.set(dut.cfg_data, word_view(new_word, a))
                ctx.set(dut.cfg_we, 1)
                await ctx.tick()
            ctx.set(dut.cfg_we, 0)
            ctx.set(dut.i, 0xF)
            ctx.set(dut.en, 1)
            await ctx.tick()
            ctx.set(dut.en, 0)
            after["before_reset"] = ctx.get(dut.o)
            ctx.set(rst, 1)
            await ctx.tick()
            ctx.set(rst, 0)
            after["after_reset"] = ctx.get(dut.o)
            after["readback"] = []
            for a in range(16):
                ctx.set(dut.cfg_addr, a)
                after["readback"].append(ctx.get(dut.cfg_rdata))
            after["sweep"] = await lut_sweep(ctx, dut)

        simulate(dut, testbench, reset=rst, name=f"cell_{storage}_reset")
        mixed = (init & ((1 << 32) - 1)) | (new_word & ~((1 << 32) - 1))
        assert word_view(mixed, 0xF) != 0                # else the reset check would be vacuous
        assert after["before_reset"] == word_view(mixed, 0xF)
        assert after["after_reset"] == 0
        assert after["readback"] == [word_view(mixed, a) for a in range(16)]
        assert after["sweep"] == [expected_outputs(mixed, a) for a in range(16)]
