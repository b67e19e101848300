"""Packages are found automatically; the task cards and leaderboards live at the top of the checkout and
install as ``mtrbench.tasks`` and ``mtrbench.leaderboards`` (``package_dir`` in setup.cfg)."""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["mtrbench", "mtrbench.*"]) + ["mtrbench.tasks", "mtrbench.leaderboards"])
