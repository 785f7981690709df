"""Board tops for amaranth-boards platforms (see the boards issue)."""
