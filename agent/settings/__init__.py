"""Settings: where each value comes from (flags, environment, config files, trusted projects) and what may set it."""
