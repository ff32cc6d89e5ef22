"""The ``kconform`` command: ``main`` builds the parser; one module per command group."""
