"""Alembic migrations of the scenario store (run programmatically by explorer.interfaces.store)."""
