"""`/healthz` (the process answers) and `/readyz` (the database answers), for load balancers."""
from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import text

from extensions import db

bp = Blueprint("health", __name__)


@bp.route("/healthz")
def healthz():
    """200 while the process serves requests. Touches nothing else."""
    return jsonify(status="ok")


@bp.route("/readyz")
def readyz():
    """200 when the database answers `SELECT 1`; a database error becomes a 503 problem."""
    db.session.execute(text("SELECT 1"))
    return jsonify(status="ok", database="ok")
