"""Search index (built by engine.ingest.search, read by engine.search.index) and query matching."""
