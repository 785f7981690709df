"""Front end, the sources Yosys reads (issue 39 and the ``$readmem`` files): copies in
Yosys' working folder with the calls of tasks Yosys refuses turned into marked ``$write``s
(:func:`drop_refused_tasks`), a ``$readmem`` file found as simulators find it, and the
note that names the simulation-only statements dropped (:func:`dropped_note`).
"""

import os
import pathlib
import re

from .errors import CompileError

__all__ = ["REFUSED_TASK", "drop_refused_tasks", "dropped_statements", "dropped_note",
           "location", "relative"]

#: A Verilog string literal.
_STRING = r'"(?:\\.|[^"\\\n])*"'
#: What the source scans below leave as it is (group 1): comments, strings, escaped and plain
#: identifiers.
_SKIPPED = r'(//[^\n]*|/\*.*?\*/|' + _STRING + r'|\\\S+|[A-Za-z_][\w$]*)'
#: A call of a system task that Yosys refuses but synthesis drops (``$finish``, ``$stop``,
#: the file output tasks), with its arguments (one level of nested parentheses); the other
#: alternatives skip comments, strings and identifiers (``a$stop``) so that they are left as
#: they are. None of these tasks is allowed outside procedural code, where a ``$write`` may
#: stand instead.
REFUSED_TASK = re.compile(
    _SKIPPED
    + r"|\$(finish|stop|f(?:display|write|strobe|monitor)[bho]?|fflush|fclose)(?![\w$])"
    r"(?:\s*\((?:{string}|[^()\"]|\((?:{string}|[^()\"])*\))*\))?".format(string=_STRING),
    re.S)
#: A ``$readmemh``/``$readmemb`` call up to its file name (group 2) and the name (group 3);
#: group 1 what :data:`_SKIPPED` leaves.
_READMEM = re.compile(
    _SKIPPED + r'|(\$readmem[hb]\s*\(\s*)"((?:\\.|[^"\\\n])*)"', re.S)
#: The text of the ``$write`` that stands for a refused task (``{task}``: its name), by which
#: the dropped ``$print`` cell is known.
_MARKER = "bitgrid-dropped:{task}"


def relative(path, folder):
    """``path`` relative to ``folder`` (where :func:`.frontend.run_yosys` runs Yosys)."""
    return os.path.relpath(os.path.abspath(path), folder)


#: A pass header of a Yosys log: ``12. Executing ABC pass (technology mapping).`` (a
#: top-level pass), ``12.3. Executing OPT_EXPR pass`` (a pass it runs)


def drop_refused_tasks(sources, folder):
    """The sources to read, with each Verilog source that calls a task Yosys refuses
    (:data:`REFUSED_TASK`: ``$finish``, ``$stop``, ``$fdisplay``...) replaced by a copy in
    ``folder`` in which each call is a ``$write`` of :data:`_MARKER` (same lines), which the
    script drops as it drops ``$display``; a source that starts with a UTF-8 byte order mark
    (which Yosys reads as an invalid token) is copied without it. The file of a
    ``$readmemh``/``$readmemb`` is found as Icarus and Verilator find it, from the folder
    ``bitgrid compile`` runs in (an absolute path as it is), else beside the source (where
    Yosys looks), and read from a copy in ``folder``: Yosys runs there, and YoWASP's file
    system reaches no other folder.

    :returns: ``(paths, includes)``: the paths to read (``sources``' order), and ``{copy:
        the original's folder}`` for ``include`` files (:func:`yosys_script`).
    :raises CompileError: if a source cannot be read.
    """
    def replace(match):
        if match.group(1) is not None:          # a comment, a string or an identifier
            return match.group(0)
        return ('$write("' + _MARKER.format(task="$" + match.group(2)) + '")'
                + "\n" * match.group(0).count("\n"))

    paths, includes, tables = [], {}, {}

    def memory_file(match):
        """A ``$readmem`` file as a simulator finds it (module docstring of
        :func:`drop_refused_tasks`), copied into ``folder``, where Yosys runs."""
        if match.group(2) is None:
            return match.group(0)
        name = match.group(3)
        for candidate in (pathlib.Path(name), source.parent / name):
            if candidate.is_file():
                break
        else:
            return match.group(0)               # Yosys says it cannot open it
        key = str(candidate.resolve())
        if key not in tables:
            copy = pathlib.Path(folder) / f"memory{len(tables)}" / candidate.name
            copy.parent.mkdir()
            copy.write_bytes(candidate.read_bytes())
            tables[key] = relative(copy, folder)
        return f'{match.group(2)}"{tables[key]}"'

    for number, source in enumerate(sources):
        if source.suffix == ".il":
            paths.append(source)
            continue
        try:
            text = source.read_bytes().decode("latin-1")    # any bytes, kept as they are
            changed = REFUSED_TASK.sub(replace, text.removeprefix("\xef\xbb\xbf"))  # a BOM
            changed = _READMEM.sub(memory_file, changed)
        except OSError as error:
            raise CompileError(f"{source}: cannot read it: {error.strerror or error}") \
                from None
        if changed == text:
            paths.append(source)
            continue
        copy = pathlib.Path(folder) / f"source{number}" / source.name
        copy.parent.mkdir()
        copy.write_bytes(changed.encode("latin-1"))
        paths.append(copy)
        includes[str(copy)] = source.resolve().parent
    return paths, includes


def location(src, names, default):
    """``FILE:LINE`` of a Yosys ``src`` attribute (``d.v:3.5-3.25``, the first of several
    joined by ``|``), the file as shown (``names``: :func:`run_yosys`); ``default`` if there
    is none."""
    first = src.split("|")[0]
    match = re.fullmatch(r"(.*?):(\d+)(?:\.\d+)?(?:-\d+(?:\.\d+)?)?", first)
    if not match:
        return first or default
    return f"{names.get(match[1], match[1])}:{match[2]}"


def dropped_statements(dump, log, names):
    """The simulation-only statements the script dropped, as ``("CONSTRUCT at FILE:LINE",
    ...)`` sorted by file and line: the cells in ``dump`` (the RTLIL that
    :func:`yosys_script` dumps before deleting them) and the calls that Yosys ignored with a
    warning in ``log``; file names as shown (``names``: :func:`run_yosys`)."""
    found, cell, src = [], None, ""
    for line in dump.splitlines():
        words = line.split(None, 2)
        value = line[line.find('"') + 1:line.rfind('"')] if '"' in line else ""
        if words[:2] == ["attribute", "\\src"]:
            src = value
        elif words[:1] == ["cell"] and len(words) == 3:
            cell = {"type": words[1], "name": words[2], "src": src}
        elif cell is not None and words[:1] == ["parameter"] and len(words) == 3:
            cell[words[1]] = value
        elif cell is not None and words == ["end"]:
            found.append((_construct(cell),
                          location(cell["src"], names, "a line Yosys does not name")))
            cell, src = None, ""
    for match in re.finditer(r"^(.*?):(\d+): Warning: Ignoring call to system task "
                             r"(\$\w+)", log, re.M):
        found.append((match[3], f"{match[1]}:{match[2]}"))

    def order(item):
        file, _, line = item[1].rpartition(":")
        return (file, int(line) if line.isdigit() else 0, item[0])
    return tuple(f"{what} at {where}" for what, where in sorted(set(found), key=order))


def _construct(cell):
    """How a dropped cell (``{"type", "name", "\\FORMAT", "\\FLAVOR"...}`` of
    :func:`dropped_statements`) is named in the note: ``$display``, ``$finish``, ``assert``..."""
    marker = _MARKER.format(task="")
    if cell.get("\\FORMAT", "").startswith(marker):
        return cell["\\FORMAT"][len(marker):]
    if cell["type"] == "$print":
        task = re.search(r"\$(?:display|write|strobe|monitor)[bho]?(?=\$)", cell["name"])
        return task[0] if task else "a print statement"
    if cell["type"] == "$check":
        return cell.get("\\FLAVOR") or "an assertion"
    return cell["type"].lstrip("$")


#: How many dropped statements :func:`dropped_note` names (the rest are counted).
_NOTE_NAMES = 8


def dropped_note(dropped):
    """The one-line note on the simulation-only statements that synthesis dropped
    (:attr:`SynthesisResult.dropped`, the report's ``dropped``), or None if none was."""
    if not dropped:
        return None
    more = len(dropped) - _NOTE_NAMES
    return ("dropped simulation-only statements, as synthesis tools do (a BitGrid program "
            "cannot print, stop a simulation or check an assertion): "
            + ", ".join(dropped[:_NOTE_NAMES]) + (f" and {more} more" if more > 0 else ""))
