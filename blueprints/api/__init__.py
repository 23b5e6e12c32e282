"""The `/api/v1` tree, one flask-smorest blueprint (and OpenAPI tag) per resource group."""
