"""Run under mpiexec by tests/model/test_mpi.py: ``python mpi_worker.py CASES RESULTS``.

CASES is a pickle of a list of dicts (``luts`` (H, W, 4) uint16, ``inputs`` list of 4-tuples of
edge words, and the keyword options of :func:`bitgrid.mpi.run`: ``procs``, ``halo``,
``emulator``). The root rank writes RESULTS, a pickle of a list with, per case, the edge outputs
(a list of 4-tuples) and the per-rank statistics (dicts), or the error's type and message.
"""

import pickle
import sys

from mpi4py import MPI

from bitgrid import mpi
from bitgrid.config import Configuration
from bitgrid.files import atomic_write


def main(cases_path, results_path):
    comm = MPI.COMM_WORLD
    root = comm.Get_rank() == 0
    with open(cases_path, "rb") as file:
        cases = pickle.load(file)
    results = []
    for case in cases:
        options = {k: case[k] for k in ("procs", "halo", "emulator") if k in case}
        luts = case["luts"]
        config = Configuration(luts.shape[1], luts.shape[0], luts) if root else None
        try:
            run = mpi.run(config, case["inputs"] if root else None, comm=comm, **options)
        except ValueError as error:
            results.append({"error": (type(error).__name__, str(error))})
            continue
        if root:
            results.append({"outputs": [tuple(e) for e in run.edges()],
                            "shape": str(run.decomposition.shape),
                            "xs": run.decomposition.xs, "ys": run.decomposition.ys,
                            "emulator": run.emulator,
                            "stats": [s._asdict() for s in run.stats]})
    if root:
        atomic_write(results_path, pickle.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])
