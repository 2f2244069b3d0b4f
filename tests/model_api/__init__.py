"""The one model-API client layer (shared.net.model_api) and its three users."""
