"""Report views rendered from one results document."""
