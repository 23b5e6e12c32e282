"""Instructions per warm GET and 304, for an A/B of two checkouts under callgrind (which counts
instructions, not seconds, so a busy machine does not move the figure).

Run from the checkout to measure, against a seeded database of that checkout, once with N=0 and
once with N=300; (total(300) - total(0)) / 1800 is one request's instructions (3 paths, each a
200 answered from the worker's kept answers and a 304):

    valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/warm_instructions.py 300

Environment as gunicorn's (DATABASE_URL, INSTANCE_PATH, RATELIMIT_STORAGE_URI, CACHE_*); raise
READ_RATELIMIT and RATELIMIT_DEFAULT so 1 800 requests from one address are not refused."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.getcwd())
n = int(sys.argv[1])
from wsgi import app  # noqa: E402  (the checkout measured, first on the path)

c = app.test_client()
H = {"Host": "localhost", "Accept-Encoding": "gzip"}
paths = ["/api/v1/stories/3", "/api/v1/front", "/api/v1/stories?limit=15"]
tags = {}
for p in paths:
    for _ in range(3):
        r = c.get(p, headers=H)
        assert r.status_code == 200, (p, r.status_code)
    tags[p] = r.headers["ETag"]
for _ in range(n):
    for p in paths:
        r = c.get(p, headers=H)
        assert r.status_code == 200
        r = c.get(p, headers={**H, "If-None-Match": tags[p]})
        assert r.status_code == 304, r.status_code
print("ok", n)
