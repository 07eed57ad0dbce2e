"""Stage two: declared requirements resolved into a lock and downloaded, on the host (the only networked step)."""
