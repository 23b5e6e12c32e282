"""`/healthz` (the process answers) and `/readyz` (the database answers), for load balancers."""
from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import text

from extensions import db
from web import policy

# Load balancers ask the process, not a paper: no Host lookup, never counted, never stored.
bp = policy.blueprint(Blueprint("health", __name__), paper=False, cache=False, limit="none",
                      problems=True)


@bp.route("/healthz")
def healthz():
    """200 while the process serves requests. Touches nothing else."""
    return jsonify(status="ok")


@bp.route("/readyz")
def readyz():
    """200 when the database answers `SELECT 1`; a database error becomes a 503 problem."""
    db.session.execute(text("SELECT 1"))
    return jsonify(status="ok", database="ok")
