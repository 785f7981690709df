"""``bitgrid serve`` and ``bitgrid client`` on the command line: a server process driven by the
client command, and the bad-input contract (exit 2, one line) of both."""

import contextlib
import json
import re
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bitgrid import Configuration, Emulator, bitstream
from bitgrid.cli import main
from bitgrid.terms import Edges

from support.bgcf import serving


@contextlib.contextmanager
def serve_process(*args):
    """``bitgrid serve`` as a process on a free port; yields ``(process, port)``."""
    process = subprocess.Popen([sys.executable, "-m", "bitgrid", "serve", "--port", "0", *args],
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        line = process.stderr.readline()
        match = re.search(r"at 127\.0\.0\.1:(\d+);", line)
        assert match, line + process.stderr.read()
        yield process, int(match.group(1))
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(10)


def client(*args):
    return CliRunner().invoke(main, ["client", *args])


def test_serve_and_client_processes(tmp_path):
    config = Configuration.random(8, 8, seed=21)
    program = tmp_path / "p.bgbs"
    bitstream.save(str(program), config)
    with serve_process("--target", "emu", "--program", str(program)) as (process, port):
        result = client("--port", str(port), "--hello", "--set", "W=0x5a,N=3", "--step", "5",
                        "--get", "--status", "--json", "--readback", str(tmp_path / "rb.bgbs"))
        assert result.exit_code == 0, result.output
        lines = [json.loads(line) for line in result.output.splitlines()]
        reference = Emulator(config)
        for _ in range(5):
            expected = reference.step(Edges(n=3, w=0x5A))
        assert lines[0]["hello"] == {"width": 8, "height": 8, "proto_version": 1,
                                     "features": 63}
        assert lines[1]["outputs"] == dict(zip("NESW", expected))
        assert lines[2]["status"] == {"subcycle": 5, "phase": "B", "loaded": True, "links": 0}
        assert bitstream.load(str(tmp_path / "rb.bgbs")).config == config
        result = client("--port", str(port), "--set", "W=0x100")
        assert result.exit_code == 2
        assert "W=0x100 has bits beyond its 8 lanes (TOO_WIDE)" in result.output
        assert client("--port", str(port), "--shutdown").exit_code == 0
        assert process.wait(10) == 0


def test_client_links_two_servers(tmp_path):
    with serving("emu", 4, 4) as west, serving("emu", 4, 4) as east:
        west_cfg, east_cfg = Configuration.random(4, 4, seed=1), Configuration.random(4, 4, seed=2)
        for server, config, name in ((west, west_cfg, "w"), (east, east_cfg, "e")):
            path = tmp_path / f"{name}.bgbs"
            bitstream.save(str(path), config)
            assert client("--port", str(server.port), "--load", str(path)).exit_code == 0
        result = client("--port", str(west.port), "--link",
                        f"E,E,W,127.0.0.1,{east.port},duplex", "--step", "3", "--status")
        assert result.exit_code == 0, result.output
        assert f"link: E E -> W at 127.0.0.1:{east.port}, 4 lanes" in result.output
        assert "'links': 1" in result.output
        result = client("--port", str(east.port), "--status")
        assert "'subcycle': 3" in result.output


@pytest.mark.parametrize("args, message", [
    (["--set", "W"], "--set 'W': give name=value pairs"),
    (["--set", "W=zz"], "--set 'W=zz': give name=value pairs"),
    (["--set", "W=-1"], "a value is an unsigned integer"),
    (["--set", "W=\u0661"], "give name=value pairs"),          # an Arabic-Indic digit
    (["--timeout", "nan", "--hello"], "Invalid value for '--timeout': 'nan' is not a number"),
    (["--wait", "inf", "--hello"], "Invalid value for '--wait': 'inf' is not a number"),
    (["--timeout", "0x10", "--hello"], "'0x10' is not a number of seconds"),
    (["--link", "E,E,W,h"], "give --link DIR,LOCAL_OUT,REMOTE_IN,HOST,PORT"),
    (["--link", "Q,E,W,h,1"], "DIR is N, E, S or W"),
    (["--link", "E,E,W,h,0"], "PORT is 1 to 65535"),
    (["--readback", ""], "the output path is empty"),
    (["--set", ""], "--set '': give name=value pairs"),
    (["--set", "N=1,"], "--set '': give name=value pairs"),
    (["--set", "N=1,N=2"], "--set: N is given twice"),
    (["--set", "N=1", "--set", "N=2"], "--set: N is given twice"),
    ([], "nothing to do: give --hello, --load"),
    (["--load", ""], "--load is empty"),
    (["--host", "a..b", "--hello"], "--host 'a..b' is not a host name or address"),
])
def test_client_bad_options(args, message):
    result = client("--port", "9", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_client_with_no_server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = client("--port", str(port), "--hello")
    assert result.exit_code == 2
    assert result.output.startswith(f"error: cannot reach a BGCF server at 127.0.0.1:{port}")
    assert result.output.rstrip().endswith("start one with bitgrid serve")


def test_client_refusal_is_one_line(tmp_path):
    bad = tmp_path / "bad.bgbs"
    data = bytearray(bitstream.write(Configuration.random(8, 8, seed=1)))
    data[40] ^= 1
    bad.write_bytes(bytes(data))
    with serving("emu", 8, 8) as server:
        result = client("--port", str(server.port), "--load", str(bad))
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "crc mismatch" in result.output and "(BAD_PROGRAM)" in result.output


@pytest.mark.parametrize("args, message", [
    (["--target", "emu"], "the emu target needs a grid size: give --size WxH or --program"),
    (["--size", "8x8", "--ports", "x.ports.json"], "--ports names the ports of --program"),
    (["--size", "7x8"], "even"),
    (["--target", "nowhere", "--size", "8x8"], "unknown target 'nowhere'"),
    (["--target", "mesh:3x1", "--size", "8x8"], "mesh"),
    (["--size", "8x8", "--bind", ""], "--bind is empty"),
    (["--program", ""], "--program is empty: give a file name"),
    (["--size", "8x8", "--ports", ""], "--ports is empty"),
    (["--size", "8x8", "--bind", "no.such.host.invalid"], "cannot listen on"),
])
def test_serve_bad_input(args, message):
    result = CliRunner().invoke(main, ["serve", "--port", "0", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_serve_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", "--size", "8x8", "--port", str(port)])
    assert result.exit_code == 2
    assert f"port {port} on 127.0.0.1 is in use" in result.output


def test_serve_program_and_size_disagree(tmp_path):
    program = tmp_path / "p.bgbs"
    bitstream.save(str(program), Configuration(8, 8))
    result = CliRunner().invoke(main, ["serve", "--program", str(program), "--size", "4x4"])
    assert result.exit_code == 2
    assert "--size 4x4 but" in result.output and "drop --size" in result.output


def test_a_program_sliced_over_four_serve_processes(tmp_path):
    """The way docs/serve.md says: `bitgrid bitstream slice`, one `bitgrid serve` process per
    chip, `bitgrid client --load` and `--link ...,duplex`; then at every subcycle the four
    servers' outer edges are the whole program's on one emulator."""
    import random
    from bitgrid.bgcf import BgcfClient
    from bitgrid.bgcf.client import edge_values
    from bitgrid.mesh import MeshShape, join_edges, split_edges
    from support.configs import mixed_config
    rng = random.Random(31)
    config = mixed_config(8, 8, rng)
    whole = tmp_path / "whole.bgbs"
    bitstream.save(str(whole), config)
    result = CliRunner().invoke(main, ["bitstream", "slice", str(whole), "--mesh", "2x2",
                                       "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    shape = MeshShape(2, 2)
    with contextlib.ExitStack() as stack:
        ports = {chip: stack.enter_context(serve_process("--size", "4x4"))[1]
                 for chip in shape.chips()}
        for (col, row), port in ports.items():
            tile = tmp_path / f"whole.c{col}r{row}.bgbs"
            assert client("--port", str(port), "--load", str(tile)).exit_code == 0
        for chip, side, peer, back in (((0, 0), "E", (1, 0), "W"), ((0, 0), "S", (0, 1), "N"),
                                       ((1, 0), "S", (1, 1), "N"), ((0, 1), "E", (1, 1), "W")):
            link = f"{side},{side},{back},127.0.0.1,{ports[peer]},duplex"
            result = client("--port", str(ports[chip]), "--link", link)
            assert result.exit_code == 0, result.output
        clients = {chip: stack.enter_context(BgcfClient(port=port))
                   for chip, port in ports.items()}
        reference = Emulator(config)
        for t in range(16):
            edges = Edges(*(rng.getrandbits(8) for _ in range(4)))
            own = split_edges(edges, shape, 4, 4)
            for chip, connection in clients.items():
                outer = {s for s in "NESW" if shape.neighbour(chip, s) is None}
                connection.set_inputs({name: value for name, value in
                                       edge_values(own[chip], 4, 4).items() if name in outer})
                connection.check()
            clients[0, 0].step(1)
            clients[0, 0].check()
            outputs = {chip: Edges(*(c.outputs()[s] for s in "NESW"))
                       for chip, c in clients.items()}
            assert join_edges(outputs, shape, 4, 4) == reference.step(edges), t


def test_client_get_says_when_a_named_port_has_no_whole_row():
    """A named output read before its row is complete prints none and the subcycles missing;
    --ports gives the port map's timing."""
    from support.port_programs import skewed_routes
    config, portmap = skewed_routes()[:2]
    portmap = portmap.for_program(config)
    with serving("emu", 8, 8, program=config, portmap=portmap) as server:
        port = str(server.port)
        result = client("--port", port, "--set", "a=10,b=3", "--step", "4", "--get")
        assert result.exit_code == 0, result.output
        assert "qa=none (no whole row since the inputs changed: 11 more subcycles)" \
            in result.output
        result = client("--port", port, "--step", "11", "--get", "--json")
        outputs = json.loads(result.output.splitlines()[0])["outputs"]
        assert (outputs["qa"], outputs["qb"]) == (10, 3)
        result = client("--port", port, "--ports", "--json")
        listed = {p["name"]: p for p in json.loads(result.output)["ports"]
                  if p["direction"] == "out"}
        assert listed["qa"]["latency"] == 10 and listed["qa"]["skews"] == [0, 5]
        assert listed["qb"]["skews"] == [-1, 2] and listed["qb"]["depth"] == 12


@pytest.mark.parametrize("name, why", [
    ("N", "N is an edge bus word"), ("W.1", "it reads as word 1 of W"),
    ("x" * 300, "a name on the wire is at most 255 bytes of UTF-8")])
def test_serve_refuses_a_port_it_could_not_serve_by_name(tmp_path, name, why):
    """A port named like a bus word used to be shadowed by the bus (a wrong value, exit 0);
    a name over 255 bytes crashed the server at its first listing."""
    from support.port_programs import skewed_routes
    from bitgrid import bitstream, ports as _ports
    config, portmap = skewed_routes()[:2]
    renamed = portmap.replace(ports=[p._replace(name=name) if p.name == "qa" else p
                                     for p in portmap.ports])
    program, mapped = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    program.write_bytes(bitstream.write(config))
    _ports.save(mapped, renamed, config)
    result = CliRunner().invoke(main, ["serve", "--program", str(program), "--ports",
                                       str(mapped), "--port", "0"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and why in result.stderr
    assert "rename it in the port map" in result.stderr
