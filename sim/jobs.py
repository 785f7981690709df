"""The job and result files between the runner and a cocotb test bench.

The runner writes a *job* (JSON) into a run folder and passes its path to the simulator in
``$BITGRID_SIM_JOB`` (:data:`JOB_ENV`); the test bench reads it (:func:`read_job`), runs its
cases and writes the *result* (:func:`write_result`, atomically, after every case) to the path
in the job's ``result`` entry; the runner reads it back when the simulator exits
(:func:`read_result`).

Every job is a JSON object with ``format`` (one of :data:`JOB_FORMATS`: the test bench's kind
and the schema version), ``result``, ``clock_ns`` and ``cases`` (a list of objects with at
least ``name``); every result has ``format`` (the matching entry of :data:`RESULT_FORMATS`),
``complete`` (the test bench finished), ``failed`` (some case differed) and ``cases`` (one object
per case, in job order, with at least ``name``). The other entries are the kind's own (see the
test bench modules).
"""

import json
import os

from bitgrid.files import atomic_write

__all__ = ["JOB_ENV", "JOB_FORMATS", "RESULT_FORMATS", "JOB_FORMAT", "RESULT_FORMAT",
           "write_job", "read_job", "write_result", "read_result", "new_result"]

#: Environment variable that carries the path of the job file to the test bench.
JOB_ENV = "BITGRID_SIM_JOB"
#: Job formats by test bench kind (version tag ``-v1``).
JOB_FORMATS = {"grid": "bitgrid-sim-job-v1", "host": "bitgrid-host-job-v1",
               "mesh": "bitgrid-mesh-job-v1"}
#: Result formats by test bench kind.
RESULT_FORMATS = {"grid": "bitgrid-sim-result-v1", "host": "bitgrid-host-result-v1",
                  "mesh": "bitgrid-mesh-result-v1"}
#: The grid test bench's formats.
JOB_FORMAT, RESULT_FORMAT = JOB_FORMATS["grid"], RESULT_FORMATS["grid"]


def _atomic_write(path, obj):
    atomic_write(path, json.dumps(obj))


def write_job(directory, job):
    """Write ``job`` as ``job.json`` in the run folder ``directory``, with its ``result`` entry
    set to ``result.json`` there; returns ``(job path, result path)``.

    :raises ValueError: if ``job["format"]`` is not one of :data:`JOB_FORMATS`.
    """
    if job.get("format") not in JOB_FORMATS.values():
        raise ValueError(f"job format must be one of {', '.join(JOB_FORMATS.values())}, "
                         f"not {job.get('format')!r}")
    job_path = os.path.join(directory, "job.json")
    result_path = os.path.join(directory, "result.json")
    _atomic_write(job_path, dict(job, result=result_path))
    return job_path, result_path


def read_job(expected_format):
    """The job named by ``$BITGRID_SIM_JOB``, inside a cocotb test module.

    :param expected_format: a format string, or a kind of :data:`JOB_FORMATS`.
    :raises AssertionError: if its ``format`` is not the expected one (a cocotb failure).
    """
    expected_format = JOB_FORMATS.get(expected_format, expected_format)
    with open(os.environ[JOB_ENV], encoding="utf-8") as file:
        job = json.load(file)
    if job.get("format") != expected_format:
        raise AssertionError(f"job format is {job.get('format')!r}, expected "
                             f"{expected_format!r}")
    return job


def new_result(kind, **entries):
    """A result object of ``kind`` (not complete, not failed, no cases), plus ``entries``."""
    return {"format": RESULT_FORMATS[kind], "complete": False, "failed": False, "cases": [],
            **entries}


def write_result(path, obj):
    """Write a result JSON file atomically (the runner reads it after the simulator exits)."""
    _atomic_write(path, obj)


def read_result(path):
    """The result object in ``path``, or None if there is none (or it is not JSON)."""
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError):
        return None
