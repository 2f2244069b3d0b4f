"""Orchestration: sub-agents on demand (spawn, delegate, parallel batches) and questions to the user."""
