"""Where the shared conformance cases live, and how tests load them.

The cases are read from ``../shared/conformance`` beside the repository (or from
``$BITGRID_CONFORMANCE``) and never copied into the repository. If they are missing, every test
that needs them fails with a message saying so: they are never silently skipped.
"""

import glob
import os

import pytest

from bitgrid import vectors

#: The repository root (tests/support/ is two folders below it).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def conformance_dir():
    path = os.environ.get("BITGRID_CONFORMANCE",
                          os.path.join(REPO, "..", "shared", "conformance"))
    return os.path.abspath(path)


def _case_files():
    return sorted(glob.glob(os.path.join(conformance_dir(), "*.json")))


def conformance_cases():
    """Names of the bitgrid-vectors-v1 cases (a placeholder if the folder is missing, so that
    the tests fail rather than vanish)."""
    names = [os.path.basename(p)[:-5] for p in _case_files()
             if not isinstance(vectors.load_case(p), vectors.BadStreamCase)]
    return names or ["<conformance folder missing>"]


def bad_stream_cases():
    names = [os.path.basename(p)[:-5] for p in _case_files()
             if isinstance(vectors.load_case(p), vectors.BadStreamCase)]
    return names or ["<conformance folder missing>"]


def load_conformance(name):
    """Load conformance case ``name``; fails the test if the shared folder is missing."""
    path = os.path.join(conformance_dir(), f"{name}.json")
    if not os.path.exists(path):
        pytest.fail(f"Conformance case {name!r} not found in {conformance_dir()}; the shared "
                    "conformance folder must sit beside the repository (../shared/conformance) "
                    "or be named by $BITGRID_CONFORMANCE")
    return vectors.load_case(path)
