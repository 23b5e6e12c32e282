"""The request path: everything between the WSGI server and a view, and back.

A map, in the order a request meets it (docs/ARCHITECTURE.md "The request path"):

    web/replay.py         WSGI middleware ahead of Flask: sends again a public answer this worker
                      made, while the paper's state stands (it runs the steps' `replay` parts)
    web/pipeline.py       the one list of before/after/teardown steps, installed on the app
    policy.py         each route's policy, declared next to the route: public or keyed,
                      cacheable and its query parameters, rate-limit class, CORS
    state.py          the paper states every worker and host shares (never stale)
    request_log.py    request id, the clock, the access log line; logging setup
    web/security.py       cheap refusals (NUL, body size) and the security headers
    web/tenancy.py        Host -> paper, desk keys -> 401/403/404
    limits.py         rate limits (flask-limiter's storage) and their headers
    caching.py        ETag/304, the response cache, Cache-Control, Surrogate-Key
    web/compression.py    gzip of large answers
    headers.py        request headers read from the WSGI environ
    web/idempotency.py    Idempotency-Key records for keyed writes
    commit.py         the one commit point of a writing request (@transactional)
    web/errors.py         problem+json and HTML error answers
    links.py          the request's absolute-URL builder
    web/static_assets.py  /static with long-lived, fingerprinted URLs
    web/jsonio.py         orjson as Flask's JSON provider

Services never import this package (tests/test_layers.py).
"""
