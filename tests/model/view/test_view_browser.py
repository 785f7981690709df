"""The HTML stepper in a real browser: Debian's Chromium, headless, driven by Playwright (no
browser download). The page loads, steps, plays, zooms and pans, and shows the values the
reference emulator computed (read from the page's DOM and its ``window.bitgrid`` accessor, and
compared with an emulator run made here)."""

import os

import numpy as np
import pytest

from bitgrid.asm.minimise import expression as minimal_expression
from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.terms import Edges
from bitgrid.view import record, render_html
from support.conformance import load_conformance
from support.view import SIDES, emulator_frames

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: pip install -e '.[test]'")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: sh tools/system-deps.sh (apt-get install "
                    "chromium)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def _open(browser, path, size=(1200, 800)):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("request", lambda request: errors.append(f"request {request.url}")
            if not request.url.startswith("file:") else None)
    page.goto(f"file://{path}")
    page.wait_for_selector("body[data-ready='1']")
    return page, errors


def _wait(page, expression, timeout=20.0):
    """Wait until the JavaScript ``expression`` is true (polled with ``evaluate``: the page's
    Content-Security-Policy forbids the eval behind Playwright's ``wait_for_function``)."""
    for _ in range(int(timeout / 0.02)):
        if page.evaluate(expression):
            return
        page.wait_for_timeout(20)
    pytest.fail(f"the page never got to {expression}")


def _shown_values(page):
    """Every output the page shows now: an array (4, height, width)."""
    values = page.evaluate("""() => {
        const g = window.bitgrid, out = [];
        for (let d = 0; d < 4; d++) for (let y = 0; y < g.height; y++)
            for (let x = 0; x < g.width; x++) out.push(g.value(x, y, d));
        return out; }""")
    width, height = page.evaluate("[bitgrid.width, bitgrid.height]")
    return np.array(values).reshape(4, height, width)


def _edge_text(edges):
    return [f"{side}_out 0x{edges[d]:x}" for d, side in enumerate(SIDES)]


def test_the_page_steps_through_the_emulator_run(browser, tmp_path):
    case = load_conformance("random_8x8")
    config = case.load_bitstream().config
    path = tmp_path / "random_8x8.html"
    render_html(config, path, trace=record(config, case.inputs))
    emulator = Emulator(config)
    expected = [emulator.step(edges) for edges in case.inputs]
    frames = emulator_frames(config, case.inputs)
    page, errors = _open(browser, path)
    assert page.evaluate("bitgrid.frame") == 0
    assert (_shown_values(page) == 0).all()
    assert page.inner_text("#frame-label").startswith("frame 0 of 128: reset")
    for k in range(1, 6):                                    # the forward button
        page.click("#forward")
        assert page.evaluate("bitgrid.frame") == k
        assert (_shown_values(page) == frames[k]).all()
        assert page.locator("#edge-outputs div").all_inner_texts() == _edge_text(expected[k - 1])
        assert page.inner_text("#phase-label") == f"phase {'AB'[(k - 1) % 2]} ran " \
            f"(x + y {'even' if (k - 1) % 2 == 0 else 'odd'})"
    page.click("#back")
    assert page.evaluate("bitgrid.frame") == 4
    assert (_shown_values(page) == frames[4]).all()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("bitgrid.frame") == 6
    page.keyboard.press("End")
    assert page.inner_text("#frame-label").startswith("frame 128 of 128: after subcycle 127")
    assert (_shown_values(page) == frames[128]).all()
    assert page.locator("#edge-outputs div").all_inner_texts() == _edge_text(expected[-1])
    assert page.is_disabled("#forward") and not page.is_disabled("#back")
    assert errors == []


def test_a_cell_shows_its_luts_expressions_and_values(browser, tmp_path):
    case = load_conformance("full_adder1")
    config = case.load_bitstream().config
    path = tmp_path / "fa.html"
    render_html(config, path, trace=record(config, case.inputs))
    frames = emulator_frames(config, case.inputs)
    page, errors = _open(browser, path)
    page.evaluate("bitgrid.setFrame(3)")
    summaries = {(0, 0): "pass: W->E", (1, 1): "pass: N->E", (0, 1): "unconfigured"}
    for x, y in ((1, 0), (0, 0), (1, 1), (0, 1)):
        point = page.evaluate(f"bitgrid.cellToClient({x}, {y})")
        page.mouse.click(point["x"], point["y"])
        parity = (x + y) % 2
        assert page.inner_text("#cell-title") == \
            f"cell ({x}, {y}) · parity {parity} · phase {'AB'[parity]}"
        assert page.locator("#cell-summary").all_inner_texts() == \
            ([summaries[x, y]] if (x, y) in summaries else [])
        rows = page.locator("#cell-outputs tr[data-side]")
        for d, side in enumerate(SIDES):
            cells = rows.nth(d).locator("td").all_inner_texts()
            lut = config[x, y][d]
            assert cells[:2] == [side, f"0x{lut:04x}"]
            assert cells[2].split(" (")[0] == minimal_expression(lut)
            assert cells[3] == str(frames[3][d, y, x])
        page.mouse.click(point["x"], point["y"])             # a second click lets it go
    assert errors == []


def test_play_and_pause(browser, tmp_path):
    config = Configuration.random(4, 4, seed=9)
    path = tmp_path / "play.html"
    render_html(config, path, trace=record(config, [Edges(w=i % 16) for i in range(40)]))
    page, errors = _open(browser, path)
    page.select_option("#speed", "30")
    page.click("#play")
    assert page.inner_text("#play") == "\u2016 pause"
    _wait(page, "bitgrid.frame >= 3")
    page.click("#play")
    assert page.evaluate("bitgrid.playing") is False
    stopped = page.evaluate("bitgrid.frame")
    page.wait_for_timeout(150)
    assert page.evaluate("bitgrid.frame") == stopped
    assert page.inner_text("#frame-label").startswith(f"frame {stopped} of 40")
    page.keyboard.press(" ")                                 # space plays to the end
    _wait(page, "bitgrid.frame === 40 && !bitgrid.playing")
    assert errors == []


def test_a_256_by_256_grid_zooms_pans_and_steps(browser, tmp_path):
    config = Configuration.random(256, 256, seed=4)
    rng = np.random.default_rng(1)
    inputs = [Edges(*(int(rng.integers(0, 1 << 62)) << 194 | int(rng.integers(0, 1 << 62))
                      for _ in range(4))) for _ in range(24)]
    path = tmp_path / "big.html"
    render_html(config, path, trace=record(config, inputs))
    frames = emulator_frames(config, inputs)
    page, errors = _open(browser, path)
    assert page.evaluate("document.querySelectorAll('*').length") < 200   # a canvas, not cells
    fitted = page.evaluate("bitgrid.scale")
    before = page.evaluate("bitgrid.cellToClient(128, 128)")
    page.mouse.move(before["x"], before["y"])
    page.mouse.wheel(0, -600)                                # zoom in around the pointer
    _wait(page, f"bitgrid.scale > {fitted * 2}")
    at = page.evaluate("bitgrid.cellToClient(128, 128)")
    assert abs(at["x"] - before["x"]) < page.evaluate("bitgrid.scale")
    page.mouse.down()                                        # drag: pan by (-150, 80)
    page.mouse.move(at["x"] - 75, at["y"] + 40, steps=3)
    page.mouse.move(at["x"] - 150, at["y"] + 80, steps=3)
    page.mouse.up()
    moved = page.evaluate("bitgrid.cellToClient(128, 128)")
    assert abs(moved["x"] - at["x"] + 150) <= 1 and abs(moved["y"] - at["y"] - 80) <= 1
    for _ in range(24):
        page.keyboard.press("ArrowRight")
    assert page.evaluate("bitgrid.frame") == 24
    picks = rng.integers(0, 256, size=(300, 2))
    shown = page.evaluate("cells => cells.map(([x, y]) => [0, 1, 2, 3].map(d => "
                          "bitgrid.value(x, y, d)))", picks.tolist())
    assert shown == [[int(frames[24][d, y, x]) for d in range(4)] for x, y in picks]
    point = page.evaluate("bitgrid.cellToClient(130, 131)")
    page.mouse.click(point["x"], point["y"])
    assert page.inner_text("#cell-title").startswith("cell (130, 131)")
    assert errors == []


def _label_ports(width, height):
    from bitgrid.ports import PortMap
    return PortMap(width, height, [
        {"name": name, "direction": direction,
         "bits": [{"side": side, "lane": lane} for lane in range(count)]}
        for name, direction, side, count in (
            ("north_in", "in", "N", width), ("east_out", "out", "E", height),
            ("south_out", "out", "S", width), ("west_in", "in", "W", height))], latency=2)


def test_a_page_without_a_run_and_its_labels(browser, tmp_path):
    """A page without a run; every lane number and port label is drawn outside the grid,
    beside its lane, on all four sides (the N and S port labels were once drawn over the
    grid's first and last rows), and the fitted view leaves room for all of them (long E and W
    labels were cut off)."""
    config = Configuration(6, 4)
    config[1, 0] = (0, 0xFF00, 0xAAAA, 0)                   # W -> E and N -> S: a crossing
    path = tmp_path / "still.html"
    render_html(config, path, portmap=_label_ports(6, 4))
    page, errors = _open(browser, path)
    assert page.inner_text("#frame-label") == \
        "no run (give --vectors, --inputs, --csv or --steps)"
    assert all(page.is_disabled(f"#{b}") for b in ("first", "back", "play", "forward", "last"))
    assert page.evaluate("bitgrid.value(1, 0, 'E')") is None
    page.evaluate("bitgrid.select(1, 0)")
    assert page.inner_text("#cell-summary") == "pass: W->E, N->S (crossing)"
    rows = page.locator("#cell-outputs tr[data-side]")
    assert rows.nth(1).locator("td").all_inner_texts() == ["E", "0xff00", "w (copy W)", "–"]
    assert page.locator("#edge-outputs div").count() == 0
    # The page draws every copy's arrow along the same polyline as the pictures (turns cut
    # their corner, straight passes cross at the centre).
    from bitgrid.terms import DIRECTIONS
    from bitgrid.view.picture import _arrow
    for source in DIRECTIONS:
        for out in DIRECTIONS:
            drawn = page.evaluate(f"bitgrid.arrowPath(2, 1, {int(source)}, {int(out)})")
            assert np.allclose(drawn, _arrow(2, 1, source, out)), (source, out)
    # Fitted, the whole of every label is on the canvas (long names too).
    canvas = page.evaluate("(() => { const b = document.getElementById('grid')"
                           ".getBoundingClientRect();"
                           " return [b.left, b.top, b.right, b.bottom]; })()")
    for box in page.evaluate("bitgrid.edgeLabels()"):
        assert canvas[0] <= box["left"] and box["right"] <= canvas[2], box
        assert canvas[1] <= box["top"] and box["bottom"] <= canvas[3], box
    for zoom in (1.0, 0.7):
        page.evaluate(f"bitgrid.zoomAt({zoom}, 600, 400)")
        grid = page.evaluate("bitgrid.gridBox()")
        labels = page.evaluate("bitgrid.edgeLabels()")
        cell = (grid["right"] - grid["left"]) / 6
        ports_seen = {(b["side"], b["lane"]) for b in labels if b["kind"] == "port"}
        assert ports_seen == {(s, lane) for s, n in (("N", 6), ("E", 4), ("S", 6), ("W", 4))
                              for lane in range(n)}
        for box in labels:
            side, lane = box["side"], box["lane"]
            outside = {"N": box["bottom"] <= grid["top"], "S": box["top"] >= grid["bottom"],
                       "W": box["right"] <= grid["left"], "E": box["left"] >= grid["right"]}
            assert outside[side], box
            if side in "NS":                                     # beside its column
                centre = grid["left"] + (lane + 0.5) * cell
                assert box["left"] <= centre <= box["right"], box
            else:                                                # beside its row
                centre = grid["top"] + (lane + 0.5) * cell
                assert box["top"] <= centre <= box["bottom"], box
            if box["kind"] == "port":
                expected = {"N": "north_in", "E": "east_out", "S": "south_out", "W": "west_in"}
                assert box["text"] == f"{expected[side]}[{lane}]"
    assert errors == []
