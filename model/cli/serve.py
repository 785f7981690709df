"""``bitgrid serve`` and ``bitgrid client``: the BGCF v1 runtime protocol over TCP
(docs/serve.md)."""

import errno
import json
import time

import click

from bitgrid.terms import SIMULATORS

from .common import check_writable, load_bitstream, load_portmap
from .errors import BadInput, explain
from .params import Seconds, SizeType

__all__ = ["serve", "client"]

_TARGET_HELP = ("What the server runs programs on: emu (the reference emulator), fast (the "
                "bit-parallel emulator), mesh:COLSxROWS (a mesh of emulated chips), loopback "
                "(the Python model of a board's protocol engine), sim (the RTL grid behind the "
                "board's host controller in cocotb) or serial:PORT (a board over its UART).")


@click.command()
@click.option("--target", "target_spec", default="emu", show_default=True, metavar="TARGET",
              help=_TARGET_HELP)
@click.option("--program", type=click.Path(dir_okay=False), metavar="P.bgbs",
              help="A BitGrid program to run from the start (it also sets the grid size).")
@click.option("--ports", "ports_path", type=click.Path(dir_okay=False), metavar="P.ports.json",
              help="The program's port map: its port names are offered beside the edge buses "
                   "while that program runs.")
@click.option("--size", type=SizeType(), metavar="WxH",
              help="Grid size, for a target without a size of its own when no --program is "
                   "given (a board reports its own).")
@click.option("--port", type=click.IntRange(0, 65535), default=9000, show_default=True,
              help="TCP port (0: any free port, printed at start).")
@click.option("--bind", default="127.0.0.1", show_default=True, metavar="ADDR",
              help="Address to listen on. Anything but a loopback address exposes the grid "
                   "to the network: give it only on a network you trust.")
@click.option("--link-forward", "forward", type=click.Choice(("both", "phase", "cycle")),
              default="both", show_default=True,
              help="What a link sends after each subcycle: every lane (both), only the lanes "
                   "the subcycle updated (phase; same results), or the seam after phase B "
                   "subcycles only (cycle; fewer messages, results differ from one grid).")
@click.option("--simulator", type=click.Choice(SIMULATORS), default="icarus", show_default=True,
              help="RTL simulator of the sim target.")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Baud rate of a serial target.")
@click.option("-v", "--verbose", is_flag=True, help="Print a line per client, load and error.")
def serve(target_spec, program, ports_path, size, port, bind, forward, simulator, baud,
          verbose):
    """Serve a BitGrid target over TCP with BGCF v1, the runtime protocol of the original
    BitGrid toolchain: its clients (and `bitgrid client`) load programs in chunks, set
    inputs, step subcycles and read outputs; servers link their seams and step in lockstep.

    \b
      bitgrid serve --target fast --size 16x16
      bitgrid client --load adder.bgbs --set W=5 --step 20 --get

    Stop it with Ctrl-C or a SHUTDOWN message (bitgrid client --shutdown).
    """
    from bitgrid.bgcf import BgcfServer, GridService
    from bitgrid.bgcf.server import is_loopback
    from bitgrid.host import open_target
    for option, value in (("--program", program), ("--ports", ports_path)):
        if value == "":
            raise BadInput(f"{option} is empty: give a file name")
    if ports_path is not None and program is None:
        raise BadInput("--ports names the ports of --program: give the program too")
    config = portmap = None
    if program is not None:
        bs = load_bitstream(program)
        config = bs.config
        if size is not None and size != (bs.width, bs.height):
            raise BadInput(f"--size {size[0]}x{size[1]} but {program} is for a {bs.width} x "
                           f"{bs.height} grid: drop --size")
        size = (bs.width, bs.height)
        if ports_path is not None:
            portmap = load_portmap(ports_path, config, program)
            from bitgrid.bgcf.names import unserved_ports
            problems = unserved_ports(portmap)
            if problems:
                name, why = problems[0]
                raise BadInput(f"{ports_path}: port {name!r} cannot be served by that name "
                               f"({why}{f'; and {len(problems) - 1} more' if len(problems) > 1 else ''}): "
                               "rename it in the port map (names are free to change: the "
                               "seal does not cover them)")
    local = target_spec in ("emu", "fast", "loopback", "sim") or target_spec.startswith("mesh:")
    if local and size is None:
        raise BadInput(f"the {target_spec} target needs a grid size: give --size WxH or "
                       "--program")
    if not bind:
        raise BadInput("--bind is empty: give an address to listen on, e.g. 127.0.0.1")
    explain("link", "no device: {error}")
    explain("simulation", f"the {simulator} simulation failed to build or run: {{error}}")
    width, height = size if size is not None else (None, None)
    target = open_target(target_spec, width=width, height=height, baudrate=baud,
                         simulator=simulator, quiet=not verbose)
    with target:
        if config is not None and (config.width, config.height) != (target.width,
                                                                     target.height):
            raise BadInput(f"{program} is for a {config.width} x {config.height} grid, "
                           f"{target_spec} has {target.width} x {target.height}")
        log = (lambda line: click.echo(f"serve: {line}", err=True)) if verbose else None
        service = GridService(target, program=config, portmap=portmap, forward=forward,
                              log=log)
        try:
            server = BgcfServer(service, bind, port)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise BadInput(f"port {port} on {bind} is in use: stop the other server or "
                               "give another --port") from None
            raise BadInput(f"cannot listen on {bind}:{port}: {error.strerror or error}") \
                from None
        exposed = "" if is_loopback(bind) else " (reachable from the network)"
        click.echo(f"serving a {target.width} x {target.height} grid on {target.name} with "
                   f"BGCF v1 at {bind}:{server.port}{exposed}; stop with Ctrl-C or SHUTDOWN",
                   err=True)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            click.echo("serve: stopped", err=True)
        finally:
            service.stop()              # a STEP that runs ends at its next batch
            server.server_close()


def _parse_values(texts):
    """The ``--set`` options, each ``name=value,name=value`` (unsigned values of any width,
    in any int base), as one dict; a name given twice is refused."""
    values = {}
    for text in texts:
        for pair in text.split(","):
            name, sep, value = (part.strip() for part in pair.partition("="))
            try:
                if not sep or not name or not value.isascii():     # int() takes any digits
                    raise ValueError
                number = int(value, 0)
            except ValueError:
                raise BadInput(f"--set {pair!r}: give name=value pairs, e.g. --set W=5,N=0x3") \
                    from None
            if number < 0:
                raise BadInput(f"--set {pair!r}: a value is an unsigned integer")
            if name in values:
                raise BadInput(f"--set: {name} is given twice")
            values[name] = number
    return values


def _parse_link(text):
    """``DIR,LOCAL_OUT,REMOTE_IN,HOST,PORT[,LANES][,duplex]`` -> keyword arguments."""
    parts = [p.strip() for p in text.split(",")]
    duplex = parts[-1].lower() == "duplex"
    if duplex:
        parts = parts[:-1]
    usage = ("--link DIR,LOCAL_OUT,REMOTE_IN,HOST,PORT[,LANES][,duplex], e.g. "
             "--link E,E,W,127.0.0.1,9001,duplex")
    if len(parts) not in (5, 6):
        raise BadInput(f"--link {text!r}: give {usage}")
    direction, local_out, remote_in, host, port, *lanes = parts
    if direction.isdigit() and int(direction) < 4:
        direction = "NESW"[int(direction)]
    if direction.upper() not in ("N", "E", "S", "W"):
        raise BadInput(f"--link {text!r}: DIR is N, E, S or W (or 0 to 3)")
    try:
        port, lanes = int(port), int(lanes[0], 0) if lanes else 0
        if not 0 < port < 65536 or not 0 <= lanes < 65536:
            raise ValueError
    except ValueError:
        raise BadInput(f"--link {text!r}: PORT is 1 to 65535 and LANES 0 to 65535") from None
    return dict(direction=direction.upper(), local_out=local_out, remote_in=remote_in,
                host=host, port=port, lanes=lanes, duplex=duplex)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The server's address.")
@click.option("--port", type=click.IntRange(1, 65535), default=9000, show_default=True)
@click.option("--timeout", type=Seconds(0.01), default=10.0, show_default=True,
              help="Seconds to wait for the server.")
@click.option("--wait", type=Seconds(0), default=0, show_default=True,
              metavar="SECONDS",
              help="Keep trying to connect for this long (a server just started in the "
                   "background).")
@click.option("--hello", is_flag=True, help="Print the server's HELLO (grid size, features).")
@click.option("--load", "program", type=click.Path(dir_okay=False), metavar="P.bgbs",
              help="Load and apply a BitGrid program.")
@click.option("--link", "links", multiple=True, metavar="DIR,LO,RI,HOST,PORT[,LANES][,duplex]",
              help="Link the server's output LO across its side DIR to input RI of the server "
                   "at HOST:PORT (duplex: and back). Repeatable.")
@click.option("--unlink", is_flag=True, help="Tear down the server's links.")
@click.option("--set", "values", multiple=True, metavar="NAME=VALUE,...",
              help="Set inputs (edge buses N, E, S, W, or port names; unsigned values of "
                   "any width, a side or port of more than 64 lanes whole). Repeatable.")
@click.option("--step", "subcycles", type=click.IntRange(0, 2**32 - 1), metavar="N",
              help="Run N subcycles.")
@click.option("--get", "get_outputs", is_flag=True,
              help="Print the outputs (whole values: the 64-bit words N, N.1, ... of a name "
                   "joined).")
@click.option("--status", is_flag=True, help="Print the subcycle counter and phase.")
@click.option("--ports", "list_ports", is_flag=True, help="Print the input and output names.")
@click.option("--readback", type=click.Path(dir_okay=False), metavar="FILE",
              help="Read the running program back into FILE (.bgbs).")
@click.option("--quit", "quit_", is_flag=True, help="Close the connection politely.")
@click.option("--shutdown", is_flag=True, help="Stop the server.")
@click.option("--json", "as_json", is_flag=True, help="Print answers as JSON lines.")
def client(host, port, timeout, wait, hello, program, links, unlink, values, subcycles, get_outputs,
           status, list_ports, readback, quit_, shutdown, as_json):
    """Drive a BGCF v1 server (bitgrid serve, or the original toolchain's serve_tcp) in one
    connection, in this order: hello, load, link, unlink, set, step, get, status, ports,
    readback, quit, shutdown.

    \b
      bitgrid client --load adder.bgbs --set W=0x35 --step 24 --get
    """
    from bitgrid.bgcf import BgcfClient, ServerError
    from bitgrid.bgcf.client import join_ports
    from bitgrid.protocol.bgcf import Feature
    parsed_values = _parse_values(values)
    parsed_links = [_parse_link(text) for text in links]
    if not (hello or program is not None or links or unlink or values or subcycles is not None
            or get_outputs or status or list_ports or readback is not None or quit_
            or shutdown):
        raise BadInput("nothing to do: give --hello, --load, --set, --step, --get, ... "
                       "(bitgrid client --help)")
    if program == "":
        raise BadInput("--load is empty: give a BitGrid program file (.bgbs)")
    if readback is not None:
        check_writable(readback)
    data = None
    if program is not None:
        with open(program, "rb") as file:
            data = file.read()

    def show(kind, value):
        if as_json:
            click.echo(json.dumps({kind: value}))
        else:
            click.echo(f"{kind}: {value}")

    deadline = time.monotonic() + wait
    while True:
        try:
            connection = BgcfClient(host, port, timeout=timeout)
            break
        except UnicodeError:
            raise BadInput(f"--host {host!r} is not a host name or address") from None
        except OSError as error:
            if time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            raise BadInput(f"cannot reach a BGCF server at {host}:{port}: "
                           f"{error.strerror or error}; start one with bitgrid serve") from None
    try:
        with connection:
            if hello:
                h = connection.hello()
                show("hello", {"width": h.width, "height": h.height,
                               "proto_version": h.proto_version, "features": h.features})
            if data is not None:
                connection.load(data)
                show("load", f"{program} applied")
            for link in parsed_links:
                lanes = connection.link(**link)
                show("link", f"{link['direction']} {link['local_out']} -> {link['remote_in']} "
                             f"at {link['host']}:{link['port']}, {lanes} lanes")
            if unlink:
                connection.unlink()
            if parsed_values:
                try:
                    connection.set_values(parsed_values)
                except ValueError as error:
                    raise BadInput(f"--set {error}") from None
            if subcycles is not None:
                connection.step(subcycles)
            if get_outputs:
                outputs, missing = connection.read()
                if as_json:
                    show("outputs", {**outputs, **{name: None for name in missing}})
                    if missing:
                        show("missing", missing)
                else:
                    show("outputs", ", ".join(
                        [f"{k}=0x{v:x}" for k, v in outputs.items()]
                        + [f"{k}=none (no whole row since the inputs changed: {n} more "
                           f"subcycle{'s' * (n != 1)})" for k, n in missing.items()]))
            if status:
                s = connection.status()
                show("status", {"subcycle": s.subcycle, "phase": "AB"[s.phase],
                                "loaded": s.loaded, "links": s.links})
            if list_ports:
                ports = [{"name": name, "direction": direction, "width": width}
                         for name, direction, width in join_ports(connection.ports())]
                server = connection.server or connection.hello()
                rows = connection.rows() if server.features & Feature.ROWS else None
                if rows is not None and rows.period:
                    # the port map's timing, as bitgrid compile's report and docs/ports.md
                    skews = {info.name: info for info in rows.ports}
                    for entry in ports:
                        info = skews.get(entry["name"])
                        if info is not None and entry["direction"] == "out":
                            entry.update(latency=rows.latency, skews=[info.first_skew,
                                                                      info.last_skew],
                                         depth=rows.latency + info.last_skew)
                    if not as_json:
                        show("timing", f"period {rows.period}, latency {rows.latency} "
                                       "subcycles (an output bit of skew s is read latency + "
                                       "s subcycles after its row starts; depth: latency + the "
                                       "last skew, when the whole row is there)")
                show("ports", ports)
            if readback is not None:
                from bitgrid.files import atomic_write
                program_bytes = connection.readback()
                atomic_write(readback, program_bytes)
                show("readback", f"wrote {readback} ({len(program_bytes)} bytes)")
            if not (quit_ or shutdown):
                connection.check()          # report an error of the last messages sent
            if quit_:
                connection.quit()
            if shutdown:
                connection.shutdown()
    except ServerError as error:
        raise BadInput(f"the server at {host}:{port} refused: {error}") from None
    except OSError as error:           # the client's ConnectionError, a reset, a broken pipe
        text = f"the connection to {host}:{port} failed: {error.strerror}" if error.errno \
            else str(error)
        raise BadInput(f"{text}: check the server (a long STEP holds it: wait with a longer "
                       "--timeout)") from None
