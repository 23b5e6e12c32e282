#!/usr/bin/env python3
"""Where one public GET spends its time: pyinstrument over N in-process requests
(docs/PERFORMANCE.md "Where the time goes").

Runs the app in this process (Flask's test client, so no sockets: what is left is the app's own
work) against DATABASE_URL, with the production hooks on (rate limiter on Redis, request log to
/dev/null), the response cache as --cache says, and prints pyinstrument's call tree.

    DATABASE_URL=sqlite:///instance/paperdesk.db .venv/bin/python -m bench.profile /api/v1/stories
    .venv/bin/python -m bench.profile /api/v1/stories --cache RedisCache       # a cache hit
    .venv/bin/python -m bench.profile /api/v1/stories --if-none-match          # a 304

Needs pyinstrument (`.venv/bin/pip install pyinstrument==5.1.2`).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parent.parent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--cache", default="NullCache",
                        help="CACHE_TYPE: NullCache (cold), SimpleCache, or RedisCache (at --redis)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14",
                        help="the limiter's storage, and the cache's with --cache RedisCache; "
                             "'memory://' for the development default")
    parser.add_argument("--if-none-match", action="store_true", help="send the current ETag")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--interval", type=float, default=0.0005, help="sampling interval, s")
    args = parser.parse_args()
    from pyinstrument import Profiler

    from app import create_app

    app = create_app({"CACHE_TYPE": args.cache, "CACHE_REDIS_URL": args.redis,
                      "CACHE_KEY_PREFIX": f"paperdesk-profile-{os.getpid()}:",
                      "RATELIMIT_ENABLED": True, "RATELIMIT_STORAGE_URI": args.redis,
                      "RATELIMIT_DEFAULT": "1000000000 per minute",
                      "READ_RATELIMIT": "1000000000 per minute"})
    for handler in logging.getLogger("paperdesk").handlers:
        handler.stream = open(os.devnull, "w")
    client = app.test_client()
    first = client.get(args.path)
    headers = {"If-None-Match": first.headers["ETag"]} if args.if_none_match else {}
    for _ in range(50):
        client.get(args.path, headers=headers)
    profiler = Profiler(interval=args.interval)
    started = time.perf_counter()
    with profiler:
        for _ in range(args.requests):
            response = client.get(args.path, headers=headers)
    per_request = (time.perf_counter() - started) / args.requests * 1000
    print(f"{args.path}: {response.status_code}, {len(response.data)} bytes, "
          f"{per_request:.2f} ms a request under the profiler ({args.requests} requests)")
    print(profiler.output_text(unicode=True, color=False, time="percent_of_total"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
