"""Settings: the config layers, the servers built here, the suite's own endpoints."""
