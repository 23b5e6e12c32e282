"""Stub: filled in by its owner."""
from flask import Blueprint

bp = Blueprint("media", __name__)
