"""shell_ops: allow-listed programs without a shell, npm scripts and hardened read-only git queries."""
