"""Text and file utilities: globs, .gitignore rules, the one directory walker, full-text queries, Markdown blocks."""
