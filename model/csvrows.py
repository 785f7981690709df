"""CSV files of port values, one row a line: what ``bitgrid eval --csv`` reads and writes.

CSV files (:func:`read_csv`, :func:`format_csv`): the header names the input ports (any order,
each once); each further line is one row, each value decimal (``-3``, for a signed port) or
``0x`` hex (``0xff``, ``-0x10``); blank lines are skipped. The output CSV is headed by the
output port names (port-map order) with decimal values (negative for signed ports).
"""

import csv
import io
import sys

from .files import read_bounded
from .ports import MAX_PORT_BITS, MAX_ROWS

__all__ = ["CsvError", "MAX_CSV_BYTES", "parse_value", "parse_csv", "read_csv", "format_csv"]

#: Largest CSV file read (bytes).
MAX_CSV_BYTES = 64 << 20
#: Most characters of one CSV value's digits (a 4096-bit port in decimal, with separators).
_MAX_DIGITS = 2 * 1234


class CsvError(ValueError):
    """A CSV file of port values that cannot be used; the message names the file, the line and
    the column or port: ``in.csv:3: column b: value 300 does not fit port b (8 bits, unsigned:
    0..255)``."""


def parse_value(text):
    """The integer written ``text``: decimal (``12``, ``-3``) or ``0x`` hex (``0xff``,
    ``-0x10``); ``_`` between digits allowed, spaces around ignored.

    :raises ValueError: ``not a decimal or 0x hex integer: 'abc'``.
    """
    body = text.strip()
    if not body:
        raise ValueError("an empty field is not a decimal or 0x hex integer; give every port "
                         "a value")
    sign, digits = (-1, body[1:]) if body.startswith("-") else (1, body)
    hexadecimal = digits[:2].lower() == "0x"
    digits = digits[2:] if hexadecimal else digits
    allowed = "0123456789abcdefABCDEF_" if hexadecimal else "0123456789_"
    if not digits or digits[0] == "_" or digits[-1] == "_" or "__" in digits \
            or any(c not in allowed for c in digits):
        raise ValueError(f"not a decimal or 0x hex integer: {text!r}")
    if len(digits) > _MAX_DIGITS:
        raise ValueError(f"{len(digits)} digits: more than any port of at most "
                         f"{MAX_PORT_BITS} bits holds")
    value = int(digits, 16 if hexadecimal else 10)
    return sign * value


def parse_csv(text, portmap, *, where="<csv>"):
    """Rows (list of dicts ``{input port: int}``) from CSV ``text`` (module docstring).

    :raises CsvError: naming ``where``, the line and the column or port, for an empty file, a
        header that names an unknown port, an output port or a port twice, or lacks an input
        port; a line with too few or too many values; a value that is not an integer or does
        not fit its port; a port map without input ports; more than :data:`MAX_ROWS` rows.
    """
    inputs = [port.name for port in portmap.inputs]
    if not inputs:
        raise CsvError(f"{where}: the port map has no input ports, so there is nothing for a "
                       "CSV to give; run a number of cycles instead (bitgrid eval --cycles N)")
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise CsvError(f"{where}:{line}: a NUL byte: this is not a CSV text file")
    reader = csv.reader(io.StringIO(text, newline=""), skipinitialspace=True, strict=True)
    header = None
    rows = []
    try:
        for record in reader:
            line = reader.line_num
            if not record or all(not field.strip() for field in record) and len(record) <= 1:
                continue                                # a blank line
            if header is None:
                header = [field.strip() for field in record]
                _check_header(header, portmap, f"{where}:{line}")
                ports = [portmap[name] for name in header]
                continue
            if len(record) != len(header):
                raise CsvError(f"{where}:{line}: {len(record)} value"
                               f"{'s' if len(record) != 1 else ''}, the header has "
                               f"{len(header)} ({', '.join(header)})")
            if len(rows) >= MAX_ROWS:
                raise CsvError(f"{where}:{line}: more than {MAX_ROWS} rows; split the file")
            row = {}
            for column, (port, field) in enumerate(zip(ports, record), start=1):
                at = f"{where}:{line}: column {column} ({port.name})"
                try:
                    value = parse_value(field)
                    port.encode(value)
                except ValueError as error:
                    message = str(error)
                    raise CsvError(f"{at}: {message[0].lower() + message[1:]}") from None
                row[port.name] = value
            rows.append(row)
    except csv.Error as error:
        raise CsvError(f"{where}:{reader.line_num}: not CSV: {error}") from None
    if header is None:
        raise CsvError(f"{where}: empty; the first line names the input ports "
                       f"({','.join(inputs)}), each further line gives one row of values")
    if not rows:
        raise CsvError(f"{where}: no rows after the header; give one line of values per "
                       "design cycle")
    return rows


def _check_header(header, portmap, at):
    inputs = [port.name for port in portmap.inputs]
    seen = set()
    for column, name in enumerate(header, start=1):
        if not name:
            raise CsvError(f"{at}: column {column} has no name (a trailing comma?); the header "
                           f"names the input ports ({', '.join(inputs)})")
        if name in seen:
            raise CsvError(f"{at}: column {column}: port {name} is named twice")
        seen.add(name)
        if name not in portmap:
            raise CsvError(f"{at}: column {column}: no port {name!r}; the input ports are "
                           f"{', '.join(inputs)}")
        if portmap[name].direction != "in":
            raise CsvError(f"{at}: column {column}: {name} is an output port; the header "
                           f"names the input ports ({', '.join(inputs)})")
    missing = [name for name in inputs if name not in seen]
    if missing:
        raise CsvError(f"{at}: no column for input port{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(missing)}; the header names every input port")


def read_csv(path, portmap):
    """Rows from the CSV file ``path`` (:func:`parse_csv`); ``"-"`` reads standard input.

    :raises CsvError: for a device or socket, a file that is not UTF-8 text or is larger than
        :data:`MAX_CSV_BYTES`, or whose content :func:`parse_csv` refuses (the message names
        ``path`` and the line).
    :raises OSError: if the file cannot be read.
    """
    if path == "-":
        path, data = "<stdin>", sys.stdin.buffer.read(MAX_CSV_BYTES + 1)
    else:
        data = read_bounded(path, MAX_CSV_BYTES, "CSV file", CsvError,
                            advice="split the rows over several files")
    if len(data) > MAX_CSV_BYTES:
        raise CsvError(f"{path}: larger than {MAX_CSV_BYTES >> 20} MiB, too large to be a CSV "
                       "file; split the rows over several files")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise CsvError(f"{path}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x}): "
                       "this is not a CSV file") from None
    return parse_csv(text, portmap, where=str(path))


def format_csv(portmap, rows):
    """CSV text of output rows: a header of the output port names (port-map order), then one
    line per row, decimal values."""
    names = [port.name for port in portmap.outputs]
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([int(row[name]) for name in names])
    return out.getvalue()

