"""Static files under content-hashed names, cached for a year.

Templates keep writing `url_for('static', filename='css/paper.css')`; a URL-defaults function
turns that into `/static/css/paper.3f2a1b9c04de.css`, where the hash is the first 12 hex digits
of the file's SHA-256. The static view serves a hashed name whose hash matches the file as it is
now with `Cache-Control: public, max-age=31536000, immutable`: a browser or CDN never asks
again, and a changed file gets a new name. A hashed name that no longer matches (a page cached
from before a deploy) gets today's file with a one-minute lifetime rather than a 404; an
unhashed name is served as Flask serves it (revalidated with its ETag). A hashed stylesheet,
script or SVG goes gzipped to a client that accepts it (compressed once per worker).

Hashes are computed once per file per process (each worker reads each asset once); under the
debug server they follow the file's modification time, so an edited stylesheet gets a new name.
"""
from __future__ import annotations

import hashlib
import mimetypes
import os
import re

from flask import Flask, Response, request
from werkzeug.security import safe_join

from web import compression

IMMUTABLE_MAX_AGE = 365 * 24 * 3600
STALE_NAME_MAX_AGE = 60
HASH_DIGITS = 12
# name.<12 hex>.ext: the hash sits before the last extension.
_HASHED = re.compile(rf"^(?P<stem>.+)\.(?P<hash>[0-9a-f]{{{HASH_DIGITS}}})(?P<ext>\.[A-Za-z0-9]+)$")


class AssetHashes:
    """SHA-256 prefixes of the files under one static folder, by relative filename. `of` is
    None for a file that does not exist (url_for then builds the plain name, which 404s)."""

    def __init__(self, folder: str, *, follow_changes: bool):
        self.folder = folder
        self.follow_changes = follow_changes
        self._known: dict[str, tuple[int, str | None]] = {}

    def exists(self, filename: str) -> bool:
        """True when `filename` names a file inside the folder (never outside it)."""
        path = safe_join(self.folder, filename)
        return path is not None and os.path.isfile(path)

    def of(self, filename: str) -> str | None:
        known = self._known.get(filename)
        if known is not None and not self.follow_changes:
            return known[1]
        # A name from a request: never a file outside the folder.
        path = safe_join(self.folder, filename)
        if path is None:
            return None
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return None
        if not os.path.isfile(path):
            return None
        if known is not None and known[0] == mtime:
            return known[1]
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()[:HASH_DIGITS]
        self._known[filename] = (mtime, digest)
        return digest


def hashed_name(filename: str, digest: str) -> str:
    """`css/paper.css`, `3f2a…` -> `css/paper.3f2a….css` (a name without an extension gets the
    hash as one: `LICENSE.3f2a…`)."""
    stem, dot, ext = filename.rpartition(".")
    if not dot or "/" in ext:
        return f"{filename}.{digest}"
    return f"{stem}.{digest}.{ext}"


def install(app: Flask) -> None:
    """Hash static URLs on `app` and serve hashed names with year-long caching. Call after the
    app's static route exists (any time after `Flask(...)`)."""
    if not app.static_folder:
        return
    hashes = AssetHashes(app.static_folder, follow_changes=app.debug)
    original = app.view_functions["static"]

    def add_hash(endpoint: str, values: dict) -> None:
        if endpoint == "static" and "filename" in values:
            digest = hashes.of(values["filename"])
            if digest:
                values["filename"] = hashed_name(values["filename"], digest)

    def static(filename: str):
        match = _HASHED.match(filename)
        # A real file whose name only looks hashed is served as it is.
        if match is None or hashes.exists(filename):
            return original(filename=filename)
        plain = match["stem"] + match["ext"]
        digest = hashes.of(plain)
        if digest is None:
            return original(filename=filename)
        response = _compressed(plain, digest) or original(filename=plain)
        if response.mimetype in compression.COMPRESSIBLE:
            response.vary.add("Accept-Encoding")  # a shared cache keeps both forms apart
        # Flask's send_file marks files no-cache (SEND_FILE_MAX_AGE_DEFAULT is None): not these.
        response.cache_control.no_cache = None
        response.cache_control.public = True
        if digest == match["hash"]:
            response.cache_control.max_age = IMMUTABLE_MAX_AGE
            response.cache_control.immutable = True
        else:
            response.cache_control.max_age = STALE_NAME_MAX_AGE
        return response

    packed: dict[tuple[str, str], tuple[bytes, str] | None] = {}

    def _compressed(filename: str, digest: str):
        """The file gzipped, for a client that accepts it, when its type is text (stylesheets,
        scripts, SVG): compressed once per file and version in each worker. None otherwise."""
        if not compression.gzip_accepted(request.environ.get("HTTP_ACCEPT_ENCODING")):
            return None
        key = (filename, digest)
        if key not in packed:
            mimetype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
            body = None
            if mimetype in compression.COMPRESSIBLE:
                with open(safe_join(app.static_folder, filename), "rb") as handle:
                    body = compression.gzip_bytes(handle.read())
            packed[key] = (body, mimetype) if body is not None else None
        found = packed[key]
        if found is None:
            return None
        response = Response(found[0], mimetype=found[1])
        response.headers["Content-Encoding"] = "gzip"
        response.headers["Vary"] = "Accept-Encoding"
        response.set_etag(f"{digest}-gz", weak=True)
        return response.make_conditional(request)

    app.url_defaults(add_hash)
    app.view_functions["static"] = static
    app.extensions["static_assets"] = hashes
