"""Runs kconform draws or enumerates (fuzz, explore, own path, the distribution) and how strong a
suite is (sensitivity over the zoo, rule knockouts).
"""
