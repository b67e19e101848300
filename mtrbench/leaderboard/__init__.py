"""Leaderboards: build, validate, verify, render."""
