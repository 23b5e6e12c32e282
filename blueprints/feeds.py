"""Stub: filled in by its owner."""
from flask import Blueprint

bp = Blueprint("feeds", __name__)
