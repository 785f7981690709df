"""bitgrid.view.page: the HTML page of every conformance program holds the program and its run
(read back from the page's data block; the browser tests are in test_view_browser.py)."""

import base64
import re

import numpy as np
import pytest

from bitgrid.asm.minimise import expression as minimal_expression
from bitgrid.config import Configuration
from bitgrid.ports import PortMap
from bitgrid.terms import Edges
from bitgrid.view import functions, record, render_html, style
from support.conformance import conformance_cases, load_conformance
from support.view import emulator_frames, page_block, truth_kind, unpack_bits


@pytest.mark.parametrize("name", conformance_cases())
def test_every_conformance_program_as_a_page(name):
    case = load_conformance(name)
    config = case.load_bitstream().config
    width, height = config.width, config.height
    page = render_html(config, trace=record(config, case.inputs), title=name)
    data = page_block(page)
    assert (data["format"], data["width"], data["height"]) == ("bitgrid-view-v1", width, height)
    luts = np.frombuffer(base64.b64decode(data["luts"]), dtype="<u2").reshape(height, width, 4)
    assert (luts == config.luts).all()
    kinds = np.frombuffer(base64.b64decode(data["kinds"]), dtype=np.uint8)
    for i in range(0, luts.size, max(1, luts.size // 64)):
        kind, side = truth_kind(int(luts.reshape(-1)[i]))
        assert data["kind_names"][str(kinds[i])].split()[0] == kind
    for lut in np.unique(config.luts):
        assert data["expressions"][str(lut)] == minimal_expression(int(lut))
    frames = emulator_frames(config, case.inputs)
    assert data["frames"] == len(frames)
    values = unpack_bits(data["values"], frames.size).reshape(frames.shape)
    assert (values == frames).all()
    edge_bits = unpack_bits(data["edge_inputs"], len(case.inputs) * 2 * (width + height))
    edge_bits = edge_bits.reshape(len(case.inputs), -1)
    for t, edges in enumerate(case.inputs):
        words, at = [], 0
        for count in (width, height, width, height):
            words.append(sum(int(b) << i for i, b in enumerate(edge_bits[t, at:at + count])))
            at += count
        assert Edges(*words) == edges
    contents = np.frombuffer(base64.b64decode(data["contents"]), dtype=np.uint8)
    assert (contents.reshape(height, width) == style.contents(functions.kinds(config))).all()


def test_the_page_is_self_contained():
    config = Configuration.random(4, 4, seed=2)
    ports = PortMap(4, 4, [{"name": "x", "direction": "in", "bits": [{"side": "W", "lane": 0}]}])
    page = render_html(config, portmap=ports, title="a </script> <b>title</b>")
    assert not re.search(r"\b(src|href)\s*=\s*[\"']", page)           # nothing loaded from anywhere
    assert not re.search(r"https?://|@import|url\(", page)
    assert "default-src 'none'" in page                          # the browser may not fetch
    assert page.count("</script>") == 2                          # the title cannot close one
    assert "<b>title</b>" not in page.split("<script")[0]
    data = page_block(page)
    assert data["title"] == "a </script> <b>title</b>"
    assert data["ports"] == ports.to_json()["ports"] and data["frames"] == 0


def test_a_page_without_a_run_and_refusals(tmp_path):
    config = Configuration.random(2, 2, seed=1)
    path = tmp_path / "p.html"
    assert render_html(config, path) == path.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="2 x 2 grid"):
        render_html(Configuration(4, 4), trace=record(config, [Edges()]))


def test_the_key_shows_both_shades_of_each_content():
    """The page's key: per content its phase A and phase B shades (the colours the canvas
    paints, from the data block's style) and its name; unconfigured is white / light grey and
    no other content is called grey."""
    page = render_html(Configuration(2, 2))
    data = page_block(page)
    keys = re.findall(r'<span class="key" data-content="(\w+)"><span style="background:'
                      r'(#\w+)"></span><span style="background:(#\w+)"></span> ([^<]*)</span>',
                      page)
    assert [k[0] for k in keys] == ["blank", "pass", "logic", "const"]
    for key, phase_a, phase_b, text in keys:
        assert (phase_a, phase_b) == (data["style"]["background"][key + "/0"],
                                      data["style"]["background"][key + "/1"])
    names = {k[0]: k[3] for k in keys}
    assert names["blank"] == "white / light grey: unconfigured"
    assert names["const"].startswith("lilac:")
    assert data["style"]["background"]["blank/1"] != data["style"]["background"]["const/0"]
