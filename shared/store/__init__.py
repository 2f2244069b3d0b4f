"""Embedded storage: SQLite files under the data directory."""
