"""Declarative task cards (one YAML file per benchmark) and embedded sample data.

Installed as the package ``mtrbench.tasks`` so the cards travel with the wheel.
"""
