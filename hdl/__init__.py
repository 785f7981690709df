"""Gateware: the BitGrid cell and grid as Amaranth components (SPEC sections 3, 4, 7)."""
