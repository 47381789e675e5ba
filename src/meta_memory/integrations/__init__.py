"""Adapters that plug meta-memory into other frameworks (optional extras)."""
