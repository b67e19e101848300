"""Result files and terminal tables."""
