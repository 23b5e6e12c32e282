"""How the app writes JSON: orjson behind Flask's JSON provider.

Every API answer is JSON, and for a small answer the encoder was a visible share of the
request (docs/PERFORMANCE.md). orjson writes the same JSON (keys in insertion order, as
`sort_keys=False` had it; compact separators), several times faster; what it cannot encode
natively (a Decimal, a set, an object with `__html__`) falls back to Flask's own rules. One
difference on the wire: non-ASCII text is written as UTF-8 rather than `\\u` escapes (the
same JSON; the answer's charset is UTF-8).
"""
from __future__ import annotations

import typing as t

import orjson
from flask.json.provider import DefaultJSONProvider


class OrjsonProvider(DefaultJSONProvider):
    """Flask's JSON provider with orjson doing the encoding (`dumps`, and so `jsonify` and
    every flask-smorest answer) and the decoding (`loads`, `request.get_json`)."""

    sort_keys = False

    def dumps(self, obj: t.Any, **kwargs: t.Any) -> str:
        """`obj` as compact JSON text. Raises TypeError for what neither orjson nor Flask's
        `default` can encode."""
        return self._bytes(obj).decode("utf-8")

    def loads(self, s: str | bytes, **kwargs: t.Any) -> t.Any:
        """Parse JSON text. Raises ValueError for what is not JSON. orjson refuses integers
        beyond 64 bits, which are JSON: those documents go to the standard parser, so what a
        request holds reaches the API's own checks (a 400 for an oversized number) as before."""
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            return super().loads(s, **kwargs)

    def response(self, *args: t.Any, **kwargs: t.Any):
        """A JSON response, the body written by orjson straight to bytes."""
        obj = self._prepare_response_obj(args, kwargs)
        return self._app.response_class(self._bytes(obj) + b"\n", mimetype=self.mimetype)

    def _bytes(self, obj: t.Any) -> bytes:
        # Dates and dataclasses go to Flask's `default`, so they are written as Flask writes them.
        try:
            return orjson.dumps(obj, default=self.default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            # An integer beyond 64 bits (orjson's limit): the standard encoder writes it.
            return super().dumps(obj, separators=(",", ":")).encode("utf-8")


_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
