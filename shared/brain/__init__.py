"""The brain: a code/document knowledge graph (projects, files, scopes, sections) behind one store interface."""
