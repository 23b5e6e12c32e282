"""Stub: security headers, filled in by its owner. `register(app)` is called by the factory."""
from flask import Flask


def register(app: Flask) -> None:
    pass
