"""Step diagrams drawn from observations (hand-written SVG, no browser needed)."""

from .draw import Frame, replica_ids, scale_cells, step_svg, strip_svg

__all__ = ["Frame", "replica_ids", "scale_cells", "step_svg", "strip_svg"]
