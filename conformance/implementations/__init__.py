"""Implementations by name: the registry (entry points, ``module:factory``, ``exec:``, ``zoo:``)
and the implementations kconform bundles: the reference per generation, realistic shapes,
choice-point variants, Kafka.
"""
