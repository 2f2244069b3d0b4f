"""Todo section: workflow-scoped tasks with priorities, dependencies and timing, stored in SQLite."""
