"""Memory: persistent memories searched by meaning (sentence-transformers vectors + SQLite FTS5)."""
