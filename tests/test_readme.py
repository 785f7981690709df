"""The README's commands, extracted and run as a newcomer would: from the repository root, in
order, with the virtualenv's commands on the path.

Every ```sh block is run with ``bash -e`` (any failing command fails the test); the one that
simulates a mesh of chips is in the slow set. A block right
after a ``<!-- readme: parse only ... -->`` comment needs a board or minutes of tools: each of
its ``bitgrid`` lines is parsed by the real command line (unknown commands, options or bad
values fail) and each ``make`` line is dry-run (``make -n``), without running anything. The
```python block is run as a script.
"""

import os
import re
import shlex
import subprocess
import sys

import click
import pytest

from bitgrid.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(REPO, "README.md")
_BLOCK = re.compile(r"(?:^(<!-- readme: parse only[^\n]*-->)\n)?^```(sh|python)\n(.*?)^```$",
                    re.M | re.S)


def _blocks():
    with open(README, encoding="utf-8") as file:
        text = file.read()
    blocks = []
    for match in _BLOCK.finditer(text):
        line = text.count("\n", 0, match.start(2)) + 1
        kind = "parse" if match.group(1) else match.group(2)
        # A simulated mesh of chips takes half a minute: in the slow set (CI runs it too).
        marks = [pytest.mark.slow] if "--mesh" in match.group(3) and "bitgrid sim" in \
            match.group(3) else []
        blocks.append(pytest.param(kind, match.group(3), id=f"line{line}-{kind}", marks=marks))
    return blocks


def _env():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("BITGRID_CONFORMANCE", None)        # the README's path, ../shared/conformance
    return env


def _commands(script):
    """The logical lines of a shell block (backslash continuations joined, comments dropped)."""
    joined = script.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines()
            if shlex.split(line, comments=True)]


def _leaves(command):
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            yield from _leaves(sub)
    else:
        yield command


def _parse(args, monkeypatch):
    """Parse a ``bitgrid`` command line by the real command line, with every command's action
    replaced by nothing. A file argument that does not exist yet (the image a build would
    write) is accepted; any other usage error fails."""
    for leaf in _leaves(main):
        monkeypatch.setattr(leaf, "callback", lambda **options: None)
    try:
        main.main(list(args), prog_name="bitgrid", standalone_mode=False)
    except click.BadParameter as error:
        if "does not exist" not in error.format_message():
            raise


def test_readme_has_blocks_of_each_kind():
    kinds = {param.values[0] for param in _blocks()}
    assert kinds == {"sh", "parse", "python"}


@pytest.mark.parametrize("kind, script", _blocks())
def test_readme_block(kind, script, monkeypatch):
    if kind == "sh":
        run = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=REPO,
                             env=_env(), capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, f"{script}\nexit {run.returncode}\n{run.stdout}\n{run.stderr}"
    elif kind == "python":
        os.makedirs(os.path.join(REPO, "out"), exist_ok=True)
        run = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=_env(),
                             capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, f"{script}\nexit {run.returncode}\n{run.stdout}\n{run.stderr}"
    else:
        commands = _commands(script)
        assert commands, "a parse-only block without commands"
        for argv in commands:
            if argv[0] == "bitgrid":
                _parse(argv[1:], monkeypatch)
            elif argv[0] == "make":
                dry = subprocess.run(["make", "-n"] + argv[1:], cwd=REPO, env=_env(),
                                     capture_output=True, text=True)
                assert dry.returncode == 0, f"make -n {argv[1:]}: {dry.stderr}"
            else:
                pytest.fail(f"a parse-only block may hold bitgrid and make lines, not {argv}")
