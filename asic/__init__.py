"""The ASIC flow: standard-cell synthesis, static timing, place and route, and a Tiny Tapeout
top (issue 14; docs/asic.md)."""
