"""The sequential designs of issue 36 (bitgrid.compiler.designs: lfsr, gray, bcd, uart_tx,
uart_rx, traffic; series ``sequential`` of ``bitgrid bench compile``), compiled and run on the
emulator by port names against cycle models written here from the Verilog's meaning (not from
the netlist): every row from row 0, a registered output showing the state before the row's
clock edge."""

import random

import pytest

from bitgrid.compiler import compile, designs
from bitgrid.evaluate import evaluate


def _run(tmp_path, name, rows, **params):
    design = designs.design(name, **params)
    result = compile(designs.write(design, tmp_path), top=design.top)
    assert result.portmap.period % 2 == 0
    return evaluate(result.config, result.portmap, rows, target="fast")


def _lfsr_model(n, taps, rows):
    q, out = 1, []
    for row in rows:
        out.append({"q": q})
        if row["en"]:
            feedback = 0
            for t in taps:
                feedback ^= (q >> t) & 1
            q = ((q << 1) | feedback) & ((1 << n) - 1)
    return out


@pytest.mark.parametrize("n, taps", [(4, (3, 2)), (8, (7, 5, 4, 3))])
def test_lfsr(tmp_path, n, taps):
    rng = random.Random(n)
    rows = [{"en": int(rng.random() < 0.8)} for _ in range(40)]
    assert _run(tmp_path, "lfsr", rows, n=n) == _lfsr_model(n, taps, rows)


def test_lfsr_period_is_maximal():
    # the model's taps (the design's) give a maximal-length sequence: 2^n - 1 states
    for n, taps in ((4, (3, 2)), (8, (7, 5, 4, 3)), (16, (15, 13, 12, 10))):
        states = [r["q"] for r in _lfsr_model(n, taps, [{"en": 1}] * (1 << n))]
        assert len(set(states)) == (1 << n) - 1 and states[(1 << n) - 1] == 1


def test_gray(tmp_path):
    rng = random.Random(3)
    rows = [{"rst": int(k == 25), "en": int(rng.random() < 0.9)} for k in range(40)]
    b, expected = 0, []
    for row in rows:
        expected.append({"g": b ^ (b >> 1)})
        b = 0 if row["rst"] else (b + row["en"]) % 16
    assert _run(tmp_path, "gray", rows, n=4) == expected


def test_bcd(tmp_path):
    rng = random.Random(4)
    rows = [{"rst": int(k == 150), "en": int(rng.random() < 0.95)} for k in range(160)]
    count, expected = 0, []
    for row in rows:
        tens, ones = divmod(count, 10)
        expected.append({"d": tens << 4 | ones, "last": int(row["en"] and count == 99)})
        count = 0 if row["rst"] else (count + row["en"]) % 100
    assert _run(tmp_path, "bcd", rows, digits=2) == expected


def test_uart_tx(tmp_path):
    divisor = 2
    rng = random.Random(5)
    rows = [{"rst": 0, "start": int(rng.random() < 0.3), "data": rng.randrange(256)}
            for _ in range(70)]
    rows[60]["rst"] = 1
    shift, count, tick, expected = 0x1FF, 0, 0, []
    for row in rows:
        expected.append({"tx": shift & 1, "busy": int(count != 0)})
        if row["rst"]:
            shift, count, tick = 0x1FF, 0, 0
        elif count == 0:
            if row["start"]:
                shift, count, tick = row["data"] << 1, 10, 0
        elif tick == divisor - 1:
            shift, count, tick = 0x100 | shift >> 1, count - 1, 0
        else:
            tick += 1
    # a frame on the line: start bit 0, 8 data bits from bit 0, stop bit 1, each `divisor` rows
    assert _run(tmp_path, "uart_tx", rows, divisor=divisor) == expected
    first = next(k for k, row in enumerate(rows) if row["start"])
    line = [e["tx"] for e in expected[first + 1:first + 1 + 10 * divisor:divisor]]
    assert line == [0] + [(rows[first]["data"] >> i) & 1 for i in range(8)] + [1]


def _frame(byte, divisor):
    bits = [0] + [(byte >> i) & 1 for i in range(8)] + [1]
    return [b for b in bits for _ in range(divisor)]


@pytest.mark.slow
def test_uart_rx(tmp_path):
    divisor = 4
    line = [1] * 3
    sent = [0xA5, 0x3C, 0xFF, 0x00]
    for byte in sent:
        line += _frame(byte, divisor) + [1] * 2
    rows = [{"rst": 0, "rx": b} for b in line]
    count, tick, data, valid, expected = 0, 0, 0, 0, []
    for row in rows:
        expected.append({"data": data, "valid": valid})
        valid = 0
        if count == 0:
            if not row["rx"]:
                count, tick = 10, divisor // 2
        elif tick == divisor - 1:
            tick = 0
            if count == 10 and row["rx"]:
                count = 0
            else:
                if count > 1:
                    data = (row["rx"] << 7) | (data >> 1)
                else:
                    valid = row["rx"]
                count -= 1
        else:
            tick += 1
    got = _run(tmp_path, "uart_rx", rows, divisor=divisor)
    assert got == expected
    # and the model is a receiver: each byte is shown once, with valid
    assert [e["data"] for e in expected if e["valid"]] == sent


def test_traffic(tmp_path):
    rng = random.Random(6)
    rows = [{"rst": int(k == 45), "req": int(rng.random() < 0.4)} for k in range(60)]
    lights = {0: 0b001, 1: 0b010, 2: 0b100, 3: 0b110}
    nxt = {1: (2, 5), 2: (3, 1), 3: (0, 4)}
    state, timer, expected = 0, 0, []
    for row in rows:
        expected.append({"light": lights[state]})
        if row["rst"]:
            state, timer = 0, 0
        elif timer:
            timer -= 1
        elif state == 0:
            if row["req"]:
                state, timer = 1, 2
        else:
            state, timer = nxt[state]
    assert _run(tmp_path, "traffic", rows) == expected
