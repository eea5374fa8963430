"""The DynamoDB store: an adapter of the core's Store port, on PynamoDB models."""

from .store import DynamoStore, get_store

__all__ = ["DynamoStore", "get_store"]
