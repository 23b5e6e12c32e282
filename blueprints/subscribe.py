"""Stub: filled in by its owner."""
from flask import Blueprint

bp = Blueprint("subscribe", __name__)
