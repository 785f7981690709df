"""Exit statuses of the ``bitgrid`` command line, and the one place where errors become them.

* ``0``: the command did what was asked; for ``emulate``, ``sim`` and ``run`` with
  ``--vectors``, every step matched the vector file;
* ``1``: a run completed and some step did not match (a mismatch report is printed);
* ``2``: bad input or environment: a bad bitstream, a size mismatch, a malformed vector file, a
  bad option, a file that cannot be read or written, a missing tool (the message says how to
  install it), a failed simulation, build or link, a job too large for the memory; also an
  unexpected error (a bug), reported as ``error: internal error: ...`` with where to report it;
* ``130``: interrupted (Ctrl-C). The tools a command runs (simulators and their builds,
  ``make`` and its compilers, board and ASIC tools) are ended at once before it exits, and the
  files they were writing removed (:mod:`bitgrid.processes`).

Every error is one line ``error: ...`` on standard error (never a traceback). Commands do not
catch library exceptions themselves: :class:`Group` maps them by :data:`KINDS`, and a command
that knows what was being done words the message with :func:`explain`.
"""

import sys

import click

__all__ = ["EXIT_OK", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_INTERRUPTED", "REPORT_TO",
           "BadInput", "Group", "explain", "message"]

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

#: Where an internal error (a bug) is to be reported.
REPORT_TO = "the BitGrid issue tracker (with the command line and this message)"


class BadInput(click.ClickException):
    """Bad input or environment: printed as ``error: ...`` with exit status 2."""
    exit_code = EXIT_BAD_INPUT

    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


#: ``(kind, module, exception class, default wording)``, the first match wins. An exception
#: class is looked up only if its module has been imported (else it cannot have been raised):
#: nothing is imported when an error happens.
_KINDS = (
    ("tool", "bitgrid.toolchain", "ToolMissingError", "{error}"),
    ("simulation", "bitgrid.sim", "SimulationError",
     "a simulation failed to build or run: {error}"),
    ("link", "bitgrid.host", "LinkError", "{error}"),          # an OSError: before "file"
    ("target", "bitgrid.host", "TargetError", "the target refused the program: {error}"),
    ("build", "bitgrid.boards", "BuildError", "build failed: {error}"),
    ("flash", "bitgrid.boards", "FlashError", "{error}"),
    ("file", "builtins", "OSError", "{where}{error}"),
    ("value", "builtins", "ValueError", "{error}"),  # BitstreamError, StimulusError, MeshError...
    ("memory", "builtins", "MemoryError",
     "out of memory ({error}); try a smaller grid or fewer steps, or free some memory"),
)


def _kind(error):
    for kind, module, name, default in _KINDS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(error, cls):
            return kind, default
    return None, None


#: The kinds of error that :func:`explain` words: ``tool`` (ToolMissingError), ``simulation``
#: (SimulationError), ``link`` (LinkError), ``target`` (TargetError), ``build``
#: (BuildError), ``flash`` (FlashError), ``file`` (OSError), ``value`` (ValueError: bad
#: input found by the library), ``memory`` (MemoryError: a job too large for this machine).
KINDS = tuple(kind for kind, *_ in _KINDS)

_META = "bitgrid.cli.explain"


def explain(kind, template):
    """Word the errors of ``kind`` (one of :data:`KINDS`) for the rest of this command:
    ``template`` with ``{error}`` where the library's message goes, e.g.
    ``explain("link", "no device: {error}")``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    click.get_current_context().find_root().meta.setdefault(_META, {})[kind] = template


def message(error, templates=None):
    """The one-line message (exit status 2) for an exception raised by a command, worded by
    ``templates`` (``{kind: template}``, see :func:`explain`) or the defaults; an exception of
    none of the :data:`KINDS` is an internal error."""
    kind, default = _kind(error)
    if kind is not None:
        text, where = str(error), ""
        if kind == "file":
            text = error.strerror or text
            where = f"{error.filename}: " if error.filename else ""
        elif kind == "memory":
            text = " ".join(text.split()) or "the system refused more memory"
        template = (templates or {}).get(kind, default)
        return template.replace("{where}", where).replace("{error}", text)
    text = " ".join(str(error).split()) or "no message"
    return (f"internal error: {type(error).__name__}: {text}; this is a bug in "
                            f"bitgrid, please report it to {REPORT_TO}")


class Group(click.Group):
    """A command group that turns every exception of its commands into the exit status
    contract (module docstring): ``error: ...`` and exit 2, never a traceback; Ctrl-C exits
    130; a closed output pipe (``| head``) ends quietly with 0. A usage error (an unknown
    option, a bad value) is one line too, naming the ``--help`` to read, instead of click's
    usage block."""

    def main(self, *args, standalone_mode=True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            status = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.NoArgsIsHelpError as error:     # a group given no command
            error.show()
            sys.exit(error.exit_code)
        except click.UsageError as error:
            where = f"; see '{error.ctx.command_path} --help'" if error.ctx is not None else ""
            click.echo(f"error: {error.format_message().rstrip('.')}{where}", err=True)
            sys.exit(error.exit_code)
        except click.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        except click.exceptions.Abort:
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        # Commands end with sys.exit(status) or return None; click returns the status of
        # ctx.exit() (e.g. --help, --version) in place of raising.
        sys.exit(status if isinstance(status, int) else EXIT_OK)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            sys.stderr.close()      # the reader went away: not an error
            sys.exit(EXIT_OK)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except Exception as error:      # noqa: BLE001 - the one place errors become statuses
            raise BadInput(message(error, ctx.find_root().meta.get(_META))) from None
