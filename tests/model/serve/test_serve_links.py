"""Server-to-server links (SPEC section 8 over BGCF): a program split over two or four
``bitgrid serve`` servers, their seams linked, gives at every subcycle the edge outputs of the
whole program on one emulator; bytes stream through identity programs in all four directions
at once; a vanished peer is an error, not a wrong answer."""

import contextlib
import random
import time

import pytest

from bitgrid import Configuration, Emulator, bitstream
from bitgrid.bgcf import ServerError
from bitgrid.bgcf.client import edge_values
from bitgrid.cell import PASS_THROUGH
from bitgrid.mesh import MeshShape, join_edges, slice_configuration, split_edges
from bitgrid.protocol.bgcf import ErrorCode
from bitgrid.terms import DIRECTIONS, Edges

from support.bgcf import connected, serving
from support.configs import mixed_config


class LinkedMesh:
    """One server per chip of ``shape`` running the tiles of ``config``, linked by ``plan``:

    * ``"duplex"``: each seam is one duplex link owned by the west or north chip; the
      north-west chip is stepped;
    * ``"duplex-reversed"``: each seam is one duplex link owned by the east or south chip; the
      south-east chip is stepped (links across the W and N sides);
    * ``"one-way"``: each seam is two links of the original protocol, one each way.
    """

    def __init__(self, stack, config, shape, plan="duplex", forward="both"):
        self.shape = MeshShape.parse(shape)
        self.width, self.height = config.width, config.height
        self.tile_w, self.tile_h = self.shape.tile_size(config.width, config.height)
        tiles = slice_configuration(config, self.shape)
        self.servers = {chip: stack.enter_context(
            serving("emu", self.tile_w, self.tile_h, forward=forward)) for chip in tiles}
        self.clients = {chip: stack.enter_context(connected(server))
                        for chip, server in self.servers.items()}
        for chip, tile in tiles.items():
            self.clients[chip].load(bitstream.write(tile))
        last = (self.shape.cols - 1, self.shape.rows - 1)
        self.master = last if plan == "duplex-reversed" else (0, 0)
        for chip in tiles:
            for side in DIRECTIONS:
                peer = self.shape.neighbour(chip, side)
                if peer is None:
                    continue
                owns = side.letter in ("WN" if plan == "duplex-reversed" else "ES")
                if plan == "one-way" or owns:
                    lanes = self.clients[chip].link(side.letter, side.letter,
                                                    side.opposite.letter, "127.0.0.1",
                                                    self.servers[peer].port,
                                                    duplex=plan != "one-way")
                    assert lanes == (self.tile_w if side.letter in "NS" else self.tile_h)

    def step(self, edges):
        """One subcycle with ``edges`` on the mesh's outer buses; the mesh's edge outputs."""
        own = split_edges(edges, self.shape, self.tile_w, self.tile_h)
        for chip, client in self.clients.items():
            outer = {side.letter for side in DIRECTIONS
                     if self.shape.neighbour(chip, side) is None}
            values = edge_values(own[chip], self.tile_w, self.tile_h)
            client.set_inputs({name: value for name, value in values.items()
                               if name[0] in outer})
            client.check()              # set before the master's step reaches the chip
        master = self.clients[self.master]
        master.step(1)
        master.check()                  # the whole mesh has stepped
        outputs = {chip: Edges(*(client.outputs()[s] for s in "NESW"))
                   for chip, client in self.clients.items()}
        return join_edges(outputs, self.shape, self.tile_w, self.tile_h)


def random_edges(rng, width, height):
    return Edges(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
                 rng.getrandbits(height))


@pytest.mark.parametrize("shape, size, plan, forward", [
    ("2x1", (8, 4), "duplex", "both"),
    ("2x1", (8, 4), "duplex-reversed", "both"),
    ("1x2", (4, 8), "duplex", "both"),
    ("1x2", (4, 8), "duplex-reversed", "phase"),
    ("2x1", (8, 4), "one-way", "both"),
    ("2x2", (8, 8), "duplex", "both"),
    ("2x2", (8, 8), "duplex", "phase"),
    ("2x2", (8, 8), "duplex-reversed", "both"),
    ("2x2", (8, 8), "one-way", "phase"),
])
def test_a_split_program_runs_as_the_whole_one(shape, size, plan, forward):
    rng = random.Random(hash((shape, plan, forward)) & 0xFFFF)
    config = mixed_config(*size, rng)
    reference = Emulator(config)
    with contextlib.ExitStack() as stack:
        mesh = LinkedMesh(stack, config, shape, plan, forward)
        for t in range(24):
            edges = random_edges(rng, *size)
            assert mesh.step(edges) == reference.step(edges), f"subcycle {t}"


def test_cycle_forwarding_keeps_the_counters_in_step():
    """``cycle`` sends the seam after phase B only (the original's policy): the results may
    differ from one grid, but every server still runs every subcycle once."""
    rng = random.Random(1)
    config = mixed_config(8, 8, rng)
    with contextlib.ExitStack() as stack:
        mesh = LinkedMesh(stack, config, "2x2", "duplex", "cycle")
        for _ in range(9):
            mesh.step(random_edges(rng, 8, 8))
        assert {client.status().subcycle for client in mesh.clients.values()} == {9}


def _identity(width, height):
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            config[x, y] = PASS_THROUGH
    return config


def test_bytes_stream_across_four_servers_in_all_four_directions_at_once():
    """A 16 x 16 identity program over a 2 x 2 mesh: two bytes a subcycle pair enter on each
    side and leave on the opposite side 16 subcycles later, exactly as on one grid."""
    rng = random.Random(8)
    config = _identity(16, 16)
    reference = Emulator(config)
    streams = {side: [rng.getrandbits(16) for _ in range(12)] for side in "NESW"}
    with contextlib.ExitStack() as stack:
        mesh = LinkedMesh(stack, config, "2x2", "duplex")
        outputs = []
        for t in range(2 * 12 + 18):
            k = min(t // 2, 11)                       # each word held for 2 subcycles
            edges = Edges(*(streams[side][k] for side in "NESW"))
            out = mesh.step(edges)
            assert out == reference.step(edges)
            outputs.append(out)
    for k in range(12):
        after = outputs[2 * k + 16]
        assert (after.s, after.w, after.n, after.e) == \
            tuple(streams[side][k] for side in "NESW"), k


def test_bytes_stream_through_two_servers_both_ways():
    config = _identity(16, 8)
    text = b"BitGrid over BGCF"
    back = bytes(reversed(text))
    with contextlib.ExitStack() as stack:
        mesh = LinkedMesh(stack, config, "2x1", "duplex")
        outputs = [mesh.step(Edges(w=text[min(t // 2, len(text) - 1)],
                                   e=back[min(t // 2, len(back) - 1)]))
                   for t in range(2 * len(text) + 18)]
    assert bytes(outputs[2 * k + 16].e for k in range(len(text))) == text
    assert bytes(outputs[2 * k + 16].w for k in range(len(back))) == back


def test_a_vanished_peer_is_an_error_and_the_server_goes_on():
    config = mixed_config(8, 4, random.Random(2))
    tiles = slice_configuration(config, MeshShape(2, 1))
    with serving("emu", 4, 4) as west, connected(west) as client:
        client.load(bitstream.write(tiles[0, 0]))
        with serving("emu", 4, 4) as east, connected(east) as other:
            other.load(bitstream.write(tiles[1, 0]))
            assert client.link("E", "E", "W", "127.0.0.1", east.port, duplex=True) == 4
            client.step(3)
            client.check()
        # The east server is gone.
        client.step(5)
        with pytest.raises(ServerError) as error:
            client.check()
        assert error.value.code == ErrorCode.PEER_LOST
        assert "the link is dropped after 1 of 5 subcycles" in error.value.message
        status = client.status()
        assert (status.subcycle, status.links) == (4, 0)
        client.step(2)                              # unlinked, it runs on alone
        assert client.status().subcycle == 6


def test_link_lanes_are_checked_against_both_seams():
    with serving("emu", 4, 4) as west, serving("emu", 4, 8) as east, \
            connected(west) as client, connected(east) as other:
        client.load(bitstream.write(Configuration(4, 4)))
        other.load(bitstream.write(Configuration(4, 8)))
        with pytest.raises(ServerError, match="LINK of 6 lanes: E here and W at .* have 4"):
            client.link("E", "E", "W", "127.0.0.1", east.port, lanes=6)
        with pytest.raises(ServerError, match="has no input named 'Q': its inputs are N, E"):
            client.link("E", "E", "Q", "127.0.0.1", east.port)
        with pytest.raises(ServerError, match="is not a host name or address"):
            client.link("E", "E", "W", "a..b", east.port)
        with pytest.raises(ServerError, match="that is this server itself"):
            client.link("E", "E", "W", "127.0.0.1", west.port)
        assert client.link("E", "E", "W", "127.0.0.1", east.port) == 4
        with pytest.raises(ServerError, match="W at 127.0.0.1:.* is linked already"):
            client.link("E", "E", "W", "127.0.0.1", east.port, lanes=2)
        assert client.status().links == 1
        client.unlink()
        assert client.status().links == 0
        assert client.link("E", "E", "W", "127.0.0.1", east.port, lanes=2) == 2


def test_shutdown_ends_a_long_step():
    """A STEP of 2**32 - 1 subcycles holds the grid, but SHUTDOWN (and Ctrl-C) end it at its
    next batch."""
    with serving("emu", 8, 8) as server, connected(server) as client:
        client.load(bitstream.write(Configuration.random(8, 8, seed=1)))
        client.step(2**32 - 1)
        service = server.service
        for _ in range(200):                # the step has started (another connection)
            if service.subcycle:
                break
            time.sleep(0.01)
        with connected(server) as other:
            other.shutdown()
        for _ in range(100):
            if service._stepping.acquire(timeout=0.05):
                service._stepping.release()
                break
        else:
            pytest.fail("the long step did not end")
        assert 0 < service.subcycle < 2**32 - 1
