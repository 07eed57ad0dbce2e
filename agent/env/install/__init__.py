"""Stage three: the environment installed in boxes with no network, kept as images: the plan, boxes, layers, record."""
