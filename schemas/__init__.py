"""Marshmallow schemas: what goes over the wire. `*In` schemas parse input, `*Out` shape output."""
