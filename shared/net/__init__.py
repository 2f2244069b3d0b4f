"""The network: the one guarded HTTP client and the model-API client on it."""
