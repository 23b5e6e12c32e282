"""The service layer: plain functions over the session for work that spans models."""
