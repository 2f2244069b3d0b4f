"""The project's common library: section framework, configuration, errors, guards and storage."""
