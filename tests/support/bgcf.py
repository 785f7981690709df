"""BGCF servers in threads of the test process, for the tests of ``bitgrid serve``."""

import contextlib
import threading

from bitgrid.bgcf import BgcfClient, BgcfServer, GridService
from bitgrid.host import open_target


@contextlib.contextmanager
def serving(target="emu", width=8, height=8, **options):
    """A running :class:`BgcfServer` on a free loopback port over ``target`` (a
    :class:`~bitgrid.host.Target` or an :func:`~bitgrid.host.open_target` spec); yields the
    server (``.port``, ``.service``) and stops it after."""
    if isinstance(target, str):
        target = open_target(target, width=width, height=height)
    server = BgcfServer(GridService(target, **options), port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        target.close()


@contextlib.contextmanager
def connected(server, **options):
    """A :class:`BgcfClient` to ``server``."""
    with BgcfClient("127.0.0.1", server.port, **options) as client:
        yield client
