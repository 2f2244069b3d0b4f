"""The one model-API client layer (shared.model_api) and its three users."""
