"""The shared embedding machinery of memory and the brain (shared.embeddings): vector cache and worker."""
