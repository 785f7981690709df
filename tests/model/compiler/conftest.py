"""Fixtures of the compiler tests: each test design synthesised once per session."""

import pytest

from bitgrid.compiler import designs, synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory):
    """``synthesized(name, **params) -> (Design, SynthesisResult)``, cached for the session."""
    folder = tmp_path_factory.mktemp("designs")
    cache = {}

    def get(name, **params):
        key = (name, tuple(sorted(params.items())))
        if key not in cache:
            design = designs.design(name, **params)
            path = designs.write(design, folder)
            cache[key] = design, synthesize(path, top=design.top)
        return cache[key]
    return get
