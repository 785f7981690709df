"""Every use of a private cocotb or Amaranth internal, in one place.

Each override has a one-line reason, and ``tests/test_overrides.py`` checks that the private
attribute or method it relies on still exists with the expected signature, so that an upgrade
of the library fails there, loudly, rather than somewhere downstream.

* :func:`cocotb_runner`: cocotb's runner with edited build commands and simulator arguments
  (``Runner._build_command``, ``Runner._get_sim_cmd_suffix``), whose commands run as children
  that die with their parent (``Runner._execute_cmds``);
* :func:`silence_unused`: Amaranth's "created but never used" warning of an elaboratable
  (``MustUse._MustUse__silence``);
* :func:`tool_env_var`: the environment variable Amaranth reads a tool's path from
  (``amaranth._toolchain.tool_env_var``);
* :func:`gowin_chipdb_device`: the device name of a Gowin platform's chip database
  (``GowinPlatform._chipdb_device``).
"""

import subprocess

__all__ = ["cocotb_runner", "silence_unused", "tool_env_var", "gowin_chipdb_device",
           "PRIVATE_NAMES"]

#: ``(module, object, attribute)`` of every private internal used here (for the tests).
PRIVATE_NAMES = (
    ("cocotb_tools.runner", "Runner", "_build_command"),
    ("cocotb_tools.runner", "Runner", "_get_sim_cmd_suffix"),
    ("cocotb_tools.runner", "Runner", "_execute_cmds"),
    ("amaranth._unused", "MustUse", "_MustUse__silence"),
    ("amaranth._toolchain", None, "tool_env_var"),
    ("amaranth.vendor", "GowinPlatform", "_chipdb_device"),
)


def cocotb_runner(simulator, *, replacements=None, make_args=(), before_make=(), suffix=()):
    """cocotb's runner for ``simulator`` (``"icarus"``, ``"verilator"``), with hooks that its
    public API lacks (reason: cocotb has no option to edit its build commands or to put
    arguments last on the simulator command line):

    * ``replacements``: ``{argument: replacement tuple}`` applied to every build command;
    * ``make_args``: appended to the ``make`` command of the build, if there is one;
    * ``before_make``: files copied into the build folder after the simulator's code generation
      and before ``make`` (``make`` rebuilds objects older than the generated makefile);
    * ``suffix``: arguments placed last on the simulator command line;
    * every command runs through :func:`bitgrid.processes.run` (reason: cocotb starts its
      commands with ``subprocess.run`` and no hook, and a simulator must not outlive a killed
      or terminated parent, nor ``make``'s compilers an interrupted one).
    """
    from cocotb_tools.runner import get_runner
    base = type(get_runner(simulator))
    replacements = dict(replacements or {})
    before_make, suffix, make_args = [str(f) for f in before_make], list(suffix), list(make_args)

    class Runner(base):
        def _build_command(self):
            commands = []
            for command in super()._build_command():
                edited = []
                for arg in command:
                    edited += replacements.get(arg, (arg,))
                if edited and edited[0] == "make":
                    if before_make:
                        commands.append(["cp", *before_make, str(self.build_dir)])
                    edited += make_args
                commands.append(edited)
            return commands

        def _get_sim_cmd_suffix(self):
            return super()._get_sim_cmd_suffix() + suffix

        def _execute_cmds(self, cmds, cwd, stdout=None):
            from bitgrid import processes
            for cmd in cmds:
                self.log.info("Running command %s in directory %s", " ".join(map(str, cmd)), cwd)
                status = processes.run(cmd, cwd=cwd, env=self.env, stdout=stdout,
                                       stderr=None if stdout is None else subprocess.STDOUT)
                if status != 0:       # what cocotb raises (its callers catch it)
                    raise RuntimeError(f"Command failed with return code: {status}")

    Runner.__name__ = Runner.__qualname__ = base.__name__
    return Runner()


def silence_unused(elaboratable):
    """Mark ``elaboratable`` as deliberately never elaborated (reason: Amaranth warns about an
    elaboratable that is created and dropped, and has no public way to say that this is meant,
    e.g. a component replaced before elaboration or one made only to read its signature).
    Returns ``elaboratable``."""
    elaboratable._MustUse__silence = True
    return elaboratable


def tool_env_var(name):
    """The environment variable (``YOSYS``, ``NEXTPNR_ICE40`` ...) through which Amaranth's build
    scripts find tool ``name`` (reason: the YoWASP tools are passed to Amaranth's build plans
    this way, and the naming rule is not public)."""
    from amaranth._toolchain import tool_env_var as private
    return private(name)


def gowin_chipdb_device(platform):
    """The device name of the chip database of a Gowin ``platform`` (reason: nextpnr-himbaechel
    needs it, and Amaranth's Gowin platform derives it only privately, for its Apicula flow)."""
    return platform._chipdb_device
