"""docs/library.md's generated part matches the blocks, and the pictures script draws."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_library_doc_is_up_to_date():
    docs = _tool("library_docs")
    assert docs.main(["--check"]) == 0
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    from bitgrid.library import MACROS
    for name in MACROS:
        assert f"### {name}\n" in text and f"(library/{name}.svg)" in text
    # The 8 x 8 row: 64 full adders, 36 half adders, as the module docstring says.
    assert "| 8 | 24 x 24 |" in text and "| 64 | 36 |" in text


def test_pictures_script_draws_a_macro(tmp_path):
    pictures = _tool("library_pictures")
    assert pictures.main(["--out", str(tmp_path), "adder"]) == 0
    svg = (tmp_path / "adder.svg").read_text(encoding="utf-8")
    assert "<svg" in svg
    assert pictures.main(["--out", str(tmp_path), "nosuch"]) == 2
