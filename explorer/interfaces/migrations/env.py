"""Alembic environment: migrations run on a connection handed in by the scenario store."""

from __future__ import annotations

from alembic import context

from explorer.interfaces.store_schema import VERSION_TABLE, metadata

connection = context.config.attributes.get("connection")
if connection is None:  # `alembic` on the command line: the store runs migrations itself
    raise RuntimeError("run migrations through explorer.interfaces.store.ScenarioStore.migrate()")
context.configure(
    connection=connection, target_metadata=metadata, version_table=VERSION_TABLE,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
