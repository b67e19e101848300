"""One module per measure family; each defines ``FAMILY``. The registry finds them all."""
