"""Render the picture of every macro of bitgrid.library for docs/library.md:
``docs/library/<name>.svg``, the block (default parameters, or :data:`PICTURE_PARAMS`) alone
on a grid with its ports labelled, drawn by the viewer (:func:`bitgrid.view.view`).

    python tools/library_pictures.py [--out docs/library] [NAME ...]
"""

import argparse
import pathlib
import sys

from bitgrid.library import MACROS

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Parameters other than the defaults for a picture that shows something (the default
#: constant, 0, is one unconfigured cell).
PICTURE_PARAMS = {"constant": {"value": 5, "bits": 4}}


def render(name, folder):
    """Write ``folder/<name>.svg``; returns its path."""
    from bitgrid.view import view
    macro = MACROS[name]
    block = macro.build(**PICTURE_PARAMS.get(name, {}))
    alone = block.standalone()
    path = pathlib.Path(folder) / f"{name}.svg"
    view(alone.config, path, portmap=alone.portmap,
         title=f"{block.name}: {block.cell_count} cells, latency {block.latency} subcycles")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="macros to draw (default: all)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "library"),
                        help="folder of the pictures (default docs/library)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in MACROS]
    if unknown:
        print(f"No macro {unknown[0]!r}; the macros are {', '.join(MACROS)}", file=sys.stderr)
        return 2
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    for name in args.names or MACROS:
        print(render(name, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
