"""Infrastructure every layer may use: errors, atomic writes, file locks, entry-point plugins."""
