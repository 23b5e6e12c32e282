"""The `/api/v1` tree: one flask-smorest blueprint (and OpenAPI tag) per resource, each module
named for it (blueprints/__init__.py lists them); permissions.py says who may call what,
common.py holds the shared helpers."""
