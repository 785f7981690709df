"""``python -m bitgrid.bench`` (what ``make bench`` runs): the ``bitgrid bench`` command
(:mod:`bitgrid.cli.bench`), by default the whole suite.

Writes the JSON document (default ``out/bench/bench.json``) and the PNG of the scaling curves
(default ``out/bench/scaling.png``; needs matplotlib, the ``bench`` extra), and prints the
tables. Progress goes to stderr. ``--quick``: fewer and smaller sizes (about one minute instead
of four to five on 2 cores). The boards part reads earlier builds' reports under ``build/``
(``--build-missing`` builds the boards that have none: slow). Exit status 1 if a part failed
(it is kept in the JSON as an ``error``; the other parts still run). ``python -m bitgrid.bench
PART --help`` lists a part's own options.
"""

from bitgrid.cli.bench import bench

if __name__ == "__main__":
    bench(prog_name="python -m bitgrid.bench")
