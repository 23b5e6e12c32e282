"""Stub: filled in by its owner."""
from flask import Blueprint

bp = Blueprint("pages", __name__)
