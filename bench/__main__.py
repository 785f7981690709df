"""``python -m bench``: run every benchmark of the software model (currently the emulator's)."""

from .emulator import main

main()
