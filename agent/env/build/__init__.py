"""Stage three: the environment built in boxes with no network, kept as images: the plan, boxes, layers, record."""
