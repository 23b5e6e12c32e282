"""encrypt seeds: receipt signing seeds sealed at rest under the instance secret

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 06:45:00

A data migration, no schema change: every `signing_keys.private_seed` still in the clear (plain
base64, as written before this revision) becomes "v1:" + base64(SecretBox(K).encrypt(seed)),
K derived from the SECRET_KEY of the app running the migration (services/newsroom/seeds.py).
Run it with the same SECRET_KEY (or instance/secret_key) the service runs with: `flask init-db`
does. Rows already sealed are left alone, so running it twice changes nothing.

Downgrade opens the sealed seeds again with the running app's SECRET_KEY and stores them in
the clear; a seed that does not open stops it (nothing is lost: the transaction rolls back).
"""
import base64

import sqlalchemy as sa
from alembic import context, op
from flask import current_app

from services.newsroom import seeds

# revision identifiers, used by Alembic.
revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def _secret() -> str:
    if context.is_offline_mode():
        raise RuntimeError("0009 re-encrypts rows with the app's SECRET_KEY: run it online "
                           "(flask init-db), not as --sql")
    return current_app.config["SECRET_KEY"]


def _rewrite(transform) -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, kid, private_seed FROM signing_keys ORDER BY id")).all()
    for row_id, kid, stored in rows:
        new = transform(kid, stored)
        if new != stored:
            bind.execute(sa.text("UPDATE signing_keys SET private_seed = :seed WHERE id = :id"),
                         {"seed": new, "id": row_id})


def upgrade():
    secret = _secret()

    def seal(kid, stored):
        if seeds.is_sealed(stored):
            return stored
        return seeds.seal_seed(seeds.open_seed(stored, secret, kid=kid), secret)

    _rewrite(seal)


def downgrade():
    secret = _secret()
    _rewrite(lambda kid, stored: base64.b64encode(seeds.open_seed(stored, secret, kid=kid)).decode("ascii"))
