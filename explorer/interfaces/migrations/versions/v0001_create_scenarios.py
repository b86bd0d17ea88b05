"""Create the saved-scenarios table.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "explorer_scenarios",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("app_version", sa.String(32), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("view_json", sa.Text(), nullable=False),
        sa.Column("scenario_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_explorer_scenarios_created_at", "explorer_scenarios", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_explorer_scenarios_created_at", table_name="explorer_scenarios")
    op.drop_table("explorer_scenarios")
