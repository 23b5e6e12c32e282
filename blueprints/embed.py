"""Stub: filled in by its owner."""
from flask_smorest import Blueprint

bp = Blueprint("embed", __name__, description="Embeddable story cards and oEmbed.")
