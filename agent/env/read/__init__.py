"""Stage one: what a repository declares it needs, read statically on the host, never run."""
