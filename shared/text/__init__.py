"""Text and file utilities: globs, .gitignore rules, the one directory walker, full-text queries, Markdown blocks,
Python's parser one tree at a time."""
