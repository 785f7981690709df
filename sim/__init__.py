"""Simulation: cocotb runners for Icarus and Verilator, and the generic grid test bench."""
