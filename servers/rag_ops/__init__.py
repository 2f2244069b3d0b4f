"""rag_ops: the brain — knowledge graph of code and documents across projects."""
