"""file_ops: read, write, edit, list, search and manage files inside the allowed roots."""
