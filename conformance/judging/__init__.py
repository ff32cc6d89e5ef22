"""Judging one fixture on one implementation: the runner, the one engine (``judge``), levels,
safety, comparison, coarsening, conventions, choice points (``settle``), progress and
expectations.
"""
