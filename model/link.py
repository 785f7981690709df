"""Old name of :mod:`bitgrid.protocol.link` (the link layer's frame format and codec), kept
until every user imports the new one."""

from bitgrid.protocol.link import *  # noqa: F401,F403
from bitgrid.protocol.link import __all__  # noqa: F401
