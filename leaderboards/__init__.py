"""Leaderboard JSON files and their JSON Schema.

Installed as the package ``mtrbench.leaderboards`` so the schema and the published leaderboards travel
with the wheel (like ``mtrbench.tasks``).
"""
