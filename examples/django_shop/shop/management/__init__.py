"""The shop's management commands."""
