"""Security guards shared by every section: paths, URLs, commands."""
