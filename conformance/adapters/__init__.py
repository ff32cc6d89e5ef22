"""The ``Adapter`` seam and the ways across it: in-process, stdio (the protocol), the limits an
implementation declares, and the steps as sent on the wire. Imports no other package of the
harness.
"""
