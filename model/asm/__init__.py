"""BitGrid assembly: a text format for BitGrid programs, its assembler and disassembler.

A program in this text (a ``.bga`` file; docs/asm.md is the reference) states its grid size,
sets cell outputs by coordinate as boolean expressions of the cell's inputs ``n, e, s, w``
(SPEC sections 2 and 3), places macros of :mod:`bitgrid.library`, and names its edge ports,
period and latency (:mod:`bitgrid.ports`)::

    grid 4 x 2
    in  a W 0
    in  b N 1
    out sum E 0
    cell 0,0: E = w                 # wire
    cell 1,0: E = n ^ w
    cell 2..3,0: E = w

* :func:`assemble` turns text (or a file) into a configuration and a port map
  (``bitgrid asm PROGRAM.bga -o OUT.bgbs`` writes them as a BGBS bitstream and
  ``OUT.ports.json``);
* :func:`disassemble` turns a configuration back into text, each LUT as its minimal
  expression (:mod:`bitgrid.asm.minimise`), so that assembling the text gives the identical
  bitstream (``bitgrid disasm``).

Errors are :class:`AsmError` (a ``ValueError``), worded ``file:line:column: message``.
"""

import os
import pathlib

from ..porttiming import compute_latency
from .assembler import Assembly, build
from .disasm import disassemble
from .lexer import AsmError, Where
from .parser import parse, parse_expression

__all__ = ["EXTENSION", "AsmError", "Where", "Assembly", "assemble", "assemble_program",
           "disassemble", "parse_expression", "compute_latency"]

#: The file extension of BitGrid assembly text.
EXTENSION = ".bga"


def assemble_program(source, *, file=None, library=None, progress=None):
    """Assemble BitGrid assembly text into an :class:`Assembly` ``(config, portmap, order)``.

    :param source: the path of a ``.bga`` file (an ``os.PathLike`` such as a
        :class:`pathlib.Path`, or a ``str`` of one line ending in ``.bga``), or else the text
        itself (a ``str``).
    :param file: the name used in messages for text (default ``<text>``); includes in text
        are relative to the folder of ``file``, or to the current folder.
    :param library: the macro table for ``place`` (default :data:`bitgrid.library.MACROS`).
    :param progress: optional callable ``progress(line, lines)`` called now and then while the
        text is read (about 5,000 lines of dense logic a second).
    :returns: :class:`Assembly`: ``config`` (:class:`~bitgrid.config.Configuration`),
        ``portmap`` (:class:`~bitgrid.ports.PortMap`, None without port, period or latency
        declarations) and
        ``order`` (:class:`~bitgrid.bitstream.ScanOrder`).
    :raises AsmError: ``prog.bga:12:7: message`` for the first problem (an output set twice
        names both places).
    :raises OSError: if the file ``source`` cannot be read (an included file that cannot be
        read is an :class:`AsmError` at its ``include``).
    """
    if isinstance(source, str) and "\n" not in source \
            and source.rstrip().lower().endswith(EXTENSION):
        source = pathlib.Path(source.strip())
    if isinstance(source, os.PathLike):
        path = os.fspath(source)
        text = _read_top(path)
        name = path
    elif isinstance(source, str):
        text, name = source, file or "<text>"
    else:
        raise TypeError(f"assemble takes text (str) or a path (os.PathLike), not {source!r}")
    return build(parse(text, name, progress=progress), file=name, library=library)


def _read_top(path):
    from .parser import MAX_SOURCE_BYTES, read_source
    data = read_source(path)
    if data is None:
        raise AsmError(None, f"{path}: not a file; give the path of a {EXTENSION} text")
    if len(data) > MAX_SOURCE_BYTES:
        raise AsmError(None, f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AsmError(None, f"{path}: byte {error.start} is not UTF-8 text") from None


def assemble(source, *, file=None, library=None):
    """Assemble BitGrid assembly text: ``(config, portmap)``, a
    :class:`~bitgrid.config.Configuration` and a :class:`~bitgrid.ports.PortMap` (None when
    the text declares no ports, period or latency). See :func:`assemble_program` (which also
    gives the scan order) for the parameters and errors."""
    result = assemble_program(source, file=file, library=library)
    return result.config, result.portmap
