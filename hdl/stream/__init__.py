"""Packet-stream stages over :mod:`amaranth.lib.stream`: COBS framing (:mod:`.cobs`) and
checksums (:mod:`.crc`), each a small :class:`~amaranth.lib.wiring.Component` tested on its own.

Two ways of marking packets are used, as each stage needs:

* :func:`packet_layout`: every word carries ``first`` and ``last`` flags (a packet of at least
  one word). A producer that knows where its packet ends uses it (:class:`.crc.CRCAppender`,
  :class:`.cobs.COBSEncoder`).
* an *end token*: a word with ``end`` set, whose data is ignored, follows the packet's last word
  (a packet may be empty). A decoder that learns of the end only from a delimiter produces it
  (:class:`.cobs.COBSDecoder`, :class:`.crc.CRCVerifier`).
"""

from amaranth.lib import data

__all__ = ["packet_layout", "COBSEncoder", "COBSDecoder", "CRCAppender", "CRCVerifier"]


def packet_layout(data_width=8):
    """``StructLayout({"data": data_width, "first": 1, "last": 1})``: one word of a packet,
    flagged as its first and/or last."""
    return data.StructLayout({"data": data_width, "first": 1, "last": 1})


from .cobs import COBSDecoder, COBSEncoder  # noqa: E402 (they use packet_layout)
from .crc import CRCAppender, CRCVerifier  # noqa: E402
