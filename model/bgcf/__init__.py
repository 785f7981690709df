"""BGCF v1, the BitGrid runtime control protocol of the original BitGrid toolchain, over TCP:
``bitgrid serve`` puts any target of ours behind it, ``bitgrid client`` and :class:`BgcfClient`
drive any server that speaks it (docs/serve.md).

* Wire format: :mod:`bitgrid.protocol.bgcf` (frames, messages, payloads, extensions).
* :mod:`bitgrid.bgcf.names`: the names a server reads and drives (edge bus words, ports).
* :mod:`bitgrid.bgcf.server`: :class:`GridService`, :class:`BgcfServer`, seam links.
* :mod:`bitgrid.bgcf.client`: :class:`BgcfClient`.
"""

from bitgrid.protocol.bgcf import ErrorCode, Feature, Hello, Link, MsgType, Status

from .client import BgcfClient, ServerError
from .names import Names
from .server import DEFAULT_PORT, FORWARD_POLICIES, BgcfServer, GridService

__all__ = ["BgcfClient", "ServerError", "BgcfServer", "GridService", "Names", "DEFAULT_PORT",
           "FORWARD_POLICIES", "ErrorCode", "Feature", "Hello", "Link", "MsgType", "Status"]
