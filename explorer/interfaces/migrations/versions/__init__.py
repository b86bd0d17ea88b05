"""Alembic revisions of the scenario store, oldest first."""
