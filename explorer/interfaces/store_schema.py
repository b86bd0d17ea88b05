"""The scenario store's tables (SQLAlchemy Core). Alembic revisions in explorer/migrations create
them; this module is what the queries use and what `alembic revision --autogenerate` compares to."""

from __future__ import annotations

import sqlalchemy as sa

VERSION_TABLE = "explorer_alembic_version"  # not `alembic_version`: a shared database stays tidy

metadata = sa.MetaData()

scenarios = sa.Table(
    "explorer_scenarios",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(120), nullable=False),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("app_version", sa.String(32), nullable=False),
    sa.Column("schema_version", sa.Integer(), nullable=False),
    sa.Column("view_json", sa.Text(), nullable=False),
    sa.Column("scenario_json", sa.Text(), nullable=False),
    sa.Index("ix_explorer_scenarios_created_at", "created_at"),
)
