"""Looking at a program: pictures (SVG, PNG) and a self-contained HTML stepper
(``bitgrid view``).

* :mod:`.functions`: what each LUT does (constant, copy, inverted copy, logic) and its
  expression (the minimal one of ``bitgrid disasm``);
* :mod:`.trace`: a run on the reference emulator recorded frame by frame (every cell output
  after every subcycle, SPEC section 4);
* :mod:`.picture`: SVG and PNG pictures through matplotlib (the ``view`` extra);
* :mod:`.page`: the HTML page (canvas, inline script and data; no network);
* :mod:`.style`: the colours both use.

:func:`view` writes whichever the file name asks for::

    from bitgrid import bitstream, ports
    from bitgrid.view import record, view
    config = bitstream.load("out/adder8.bgbs").config
    view(config, "out/adder8.html", trace=record(config, inputs))
"""

import os

from .functions import KINDS, expression, kinds, lut_kind
from .page import render_html
from .picture import render_picture
from .trace import MAX_TRACE_BITS, Trace, TraceTooLarge, record

__all__ = ["view", "render_picture", "render_html", "record", "Trace", "TraceTooLarge",
           "MAX_TRACE_BITS", "expression", "kinds", "lut_kind", "KINDS", "SUFFIXES"]

#: The file suffixes :func:`view` writes.
SUFFIXES = (".svg", ".png", ".html")


def view(config, path, *, portmap=None, trace=None, frame=None, title=None):
    """Write a picture (``.svg``, ``.png``) or the HTML stepper (``.html``) of ``config``.

    :param portmap: a :class:`~bitgrid.ports.PortMap` whose ports are labelled.
    :param trace: a :class:`Trace` (:func:`record`) whose signals are shown.
    :param frame: for a picture, the frame shown (default the last); the page has them all.
    :raises ValueError: for another suffix, a frame with an HTML page, or a port map or
        trace of another grid size.
    """
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{path}: give a file name ending in {', '.join(SUFFIXES)}")
    if suffix == ".html":
        if frame is not None:
            raise ValueError("The HTML page steps through every frame; a frame is chosen only "
                             "for an .svg or .png picture")
        return render_html(config, path, portmap=portmap, trace=trace, title=title)
    return render_picture(config, path, portmap=portmap, trace=trace, frame=frame, title=title)
