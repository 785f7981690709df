"""BGCF v1, the BitGrid runtime control protocol of the original BitGrid toolchain, over TCP:
``bitgrid serve`` puts any target of ours behind it, ``bitgrid client`` and :class:`BgcfClient`
drive any server that speaks it (docs/serve.md).

* Wire format: :mod:`bitgrid.protocol.bgcf` (frames, messages, payloads, extensions).
* :mod:`bitgrid.bgcf.names`: the names a server reads and drives (edge bus words, ports).
* :mod:`bitgrid.bgcf.server`: :class:`GridService` (the grid behind a server),
  :class:`BgcfServer`; :mod:`bitgrid.bgcf.connection`: one client's protocol state;
  :mod:`bitgrid.bgcf.links`: seam links to peer servers.
* :mod:`bitgrid.bgcf.client`: :class:`BgcfClient`.
"""

from bitgrid.protocol.bgcf import ErrorCode, Feature, Hello, Link, MsgType, Status

from .client import BgcfClient, ServerError
from .names import Names
from .connection import DEFAULT_PORT
from .links import FORWARD_POLICIES
from .server import BgcfServer, GridService

__all__ = ["BgcfClient", "ServerError", "BgcfServer", "GridService", "Names", "DEFAULT_PORT",
           "FORWARD_POLICIES", "ErrorCode", "Feature", "Hello", "Link", "MsgType", "Status"]
