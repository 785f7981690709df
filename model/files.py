"""Writing files whole or not at all, and reading the project's small JSON documents.

:func:`atomic_write` is how the project writes every output file (Verilog, BitGrid programs,
vector files, chip files, benchmark documents and plots): a full disk or an error half way
leaves the target as it was (its old content, or no file), never a truncated file, and leaves
no temporary file behind.
"""

import contextlib
import json
import os
import stat
import tempfile

__all__ = ["atomic_write", "read_bounded", "read_json", "parse_json", "unique_object",
           "DuplicateKeyError", "TEMPORARY_SUFFIX", "MAX_JSON_BYTES"]

#: Largest JSON document :func:`read_json` reads (port maps, defect maps).
MAX_JSON_BYTES = 16 << 20

#: The suffix of the temporary file written beside the target (``.<name>.<random>.part``).
TEMPORARY_SUFFIX = ".part"


def _umask():
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)      # no /proc: read it by setting it (and put it back)
    os.umask(mask)
    return mask


def atomic_write(path, content, *, encoding="utf-8"):
    """Write ``content`` to the file ``path`` so that it appears whole or not at all.

    The content goes to a temporary file beside ``path`` (same folder, so on the same file
    system), which is flushed to the disk (``fsync``) and renamed over ``path``
    (:func:`os.replace`, atomic on POSIX). On any error, including one raised by ``content``,
    the temporary file is removed and ``path`` keeps its old content (or still does not exist).
    A new file gets the permissions of :func:`open` (``0o666`` less the umask); a replaced one
    keeps its own.

    A symbolic link is followed: its target is the file replaced, the link stays. A target that
    is not a regular file (a device such as ``/dev/null``, a FIFO) is never replaced: the
    content is written into it as it is, and an error such as ``/dev/full``'s is raised.

    :param path: the target file (str or path-like).
    :param content: ``bytes``; ``str`` (written in ``encoding``); or a callable ``writer(file)``
        that writes into the binary file object it is given.
    :returns: ``path``.
    :raises OSError: if the file cannot be written (a missing or read-only folder, a full disk),
        with ``filename`` the target's path; or whatever ``content`` raises.
    """
    given = path = os.fspath(path)
    if os.path.islink(path):
        path = os.path.realpath(path)
    try:
        status = os.stat(path)
    except OSError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_in_place(given, content, encoding)
        return given
    folder = os.path.dirname(os.path.abspath(path))
    mode = status.st_mode & 0o7777 if status is not None else 0o666 & ~_umask()
    temporary, writing = None, False
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.",
                                                 suffix=TEMPORARY_SUFFIX, dir=folder)
        with os.fdopen(descriptor, "wb") as file:
            if callable(content):
                writing = True          # its own errors pass through as they are
                content(file)
                writing = False
            else:
                file.write(content.encode(encoding) if isinstance(content, str) else content)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
        temporary = None
    except OSError as error:
        if not writing or error.filename is None:     # the disk's: name the target
            raise OSError(error.errno, error.strerror or str(error), path) from error
        raise
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    with contextlib.suppress(OSError):          # the rename itself survives a power cut
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    return given


def _write_in_place(path, content, encoding):
    """Write into a target that is not a regular file (a device, a FIFO), as ``open`` would."""
    try:
        with open(path, "wb") as file:
            if callable(content):
                content(file)
            else:
                file.write(content.encode(encoding) if isinstance(content, str) else content)
    except OSError as error:
        if error.filename is None:
            raise OSError(error.errno, error.strerror or str(error), path) from error
        raise


def read_bounded(path, limit, what, error, *, advice=""):
    """The bytes of the file ``path``, of at most ``limit`` bytes: the one reader of every
    file a user gives (port maps, defect maps, vector files, edge-input streams, CSV rows). A
    pipe or FIFO is read as it comes, up to the limit; a device or a socket is refused.

    :param what: what the file should be, for the messages (``"vector file"``).
    :param error: the exception class raised, with one line naming ``path``: ``"PATH: not a
        vector file: this is a device or socket; give the path of a vector file"``, ``"PATH:
        larger than 1024 MiB, too large to be a vector file"`` (then ``"; "`` and ``advice``,
        where given).
    :raises OSError: if the file cannot be opened or read.
    """
    with open(path, "rb") as handle:
        mode = os.fstat(handle.fileno())
        if stat.S_ISCHR(mode.st_mode) or stat.S_ISBLK(mode.st_mode) \
                or stat.S_ISSOCK(mode.st_mode):
            raise error(f"{path}: not {_a(what)}: this is a device or socket; give the path "
                        f"of {_a(what)}")
        too_large = (f"{path}: larger than {limit >> 20} MiB, too large to be {_a(what)}"
                     + (f"; {advice}" if advice else ""))
        if stat.S_ISREG(mode.st_mode) and mode.st_size > limit:
            raise error(too_large)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(too_large)
    return data


def read_json(path, what, error):
    """The JSON document in file ``path``, of at most :data:`MAX_JSON_BYTES` (see
    :func:`parse_json`).

    :param what: what the file should be, for the message (``"port map"``).
    :param error: the exception class raised for a file that is not a JSON document:
        ``error("PATH: not a JSON port map (...)")``, as :func:`parse_json`; also for a file
        larger than :data:`MAX_JSON_BYTES`.
    :raises OSError: if the file cannot be read.
    """
    return parse_json(read_bounded(path, MAX_JSON_BYTES, what, error), path, what, error)


def parse_json(data, where, what, error):
    """The JSON document in ``data`` (UTF-8 bytes, or text), read from ``where`` (a path).

    A UTF-8 byte order mark at the start is skipped (RFC 8259 lets a parser ignore it).
    Every JSON file a user gives is read through here, so that no input, however malformed,
    ends as anything but ``error``: a file nested deeper than Python's recursion limit (a
    ``RecursionError`` in the decoder) included, and an object that names a key twice
    (:func:`unique_object`: the decoder would keep the last one, silently).

    :param what: what the document should be, for the message (``"port map"``).
    :param error: the exception class raised, with one line naming ``where``: ``"WHERE looks
        like a BGBS BitGrid program, not a port map (...)"``, ``"WHERE: not a JSON port map
        (...)"`` for other bytes that are not UTF-8 or text that is not JSON, ``"WHERE: nested
        too deeply to be a port map"``.
    """
    from .bitstream import MAGIC
    if isinstance(data, (bytes, bytearray)) and data.startswith(MAGIC):
        raise error(f"{where} looks like a BGBS BitGrid program, not {_a(what)} (give it as "
                    "the PROGRAM argument)")
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return json.loads(text.removeprefix("\ufeff"),     # a BOM, as some editors write
                          object_pairs_hook=unique_object)
    except DuplicateKeyError as problem:
        raise error(f"{where}: not {_a(what)}: {problem}") from None
    except UnicodeDecodeError as problem:
        raise error(f"{where}: not a JSON {what} (byte {problem.start} is not UTF-8 "
                    "text)") from None
    except RecursionError:
        raise error(f"{where}: nested too deeply to be {_a(what)}") from None
    except json.JSONDecodeError as problem:
        raise error(f"{where}: not a JSON {what} ({problem})") from None
    except ValueError:          # a number of more digits than int() takes
        raise error(f"{where}: not {_a(what)}: it holds a number of more digits than "
                    "Python reads") from None


class DuplicateKeyError(ValueError):
    """A JSON object that names a key twice (Python's json keeps the last, silently)."""


def unique_object(pairs):
    """``object_pairs_hook`` for :func:`json.loads`: the object's dict, refusing a key named
    twice. :raises DuplicateKeyError: ``key 'N' appears twice in one object``."""
    result = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def _a(what):
    """``what`` with its indefinite article (``a port map``, ``an edge-input stream``)."""
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"
