"""``python -m bitgrid.bench`` (what ``make bench`` runs): the whole suite.

Writes the JSON document (default ``out/bench/bench.json``) and the PNG of the scaling curves
(default ``out/bench/scaling.png``; needs matplotlib, the ``bench`` extra), and prints the
tables. Progress goes to stderr. ``--quick``: fewer and smaller sizes (about one minute instead
of four to five on 2 cores). The boards part reads earlier builds' reports under ``build/``
(``--build-missing`` builds the boards that have none: slow). Exit status 1 if a part failed
(it is kept in the JSON as an ``error``; the other parts still run).
"""

import argparse
import sys

from . import PARTS, format_suite, quick_options, run_suite, suite_options, write_json
from .report import plot


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bitgrid.bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller set of sizes")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="parts to run (default: all)")
    parser.add_argument("--json", metavar="FILE", default="out/bench/bench.json",
                        help="JSON output ('-': stdout; default: %(default)s)")
    parser.add_argument("--plot", metavar="FILE", default="out/bench/scaling.png",
                        help="PNG of the scaling curves ('' : none; default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.add_argument("--build-missing", action="store_true",
                        help="boards part: build (slowly) each board that has no build report "
                             "under build/ instead of listing it as not built")
    args = parser.parse_args(argv)
    options = quick_options() if args.quick else suite_options()
    if args.build_missing:
        options["boards"] = {"build_missing": True}
    doc = run_suite(args.parts, quick=args.quick, options=options,
                    progress=not args.no_progress)
    if args.json != "-":
        print(format_suite(doc))
    write_json(doc, args.json)
    written = [args.json] if args.json != "-" else []
    if args.plot and plot(doc, args.plot):
        written.append(args.plot)
    if written:
        print(f"wrote {' and '.join(written)}", file=sys.stderr)
    failed = [name for name, part in doc["parts"].items() if "error" in part]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
