"""Security headers (web/security.py; docs/SECURITY.md "Headers") on every route of `app.url_map`, its
error pages included: a Content-Security-Policy, `nosniff`, a Referrer-Policy, framing forbidden
except on the embeds, HSTS under https only (directly, or from a trusted proxy), and no cookie
anywhere. The `Server` header of the real server (gunicorn) is checked in tests/test_faults.py."""
from __future__ import annotations

from sqlalchemy import select

from extensions import db
from models import Subscriber
from tests.fixtures.newsroom import T0
from tests.routes import PaperData, rules, urls_for

FRAMEABLE = {("embed.card", ""), ("pages.edition", "embed=1")}
# The pages that show a subscriber's address and token send no Referer at all.
NO_REFERRER = ("/subscribe/confirm", "/subscribe/unsubscribe", "/subscribe/preferences")


def site(client, desk) -> PaperData:
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again", image="https://cdn.example.com/a.jpg")
    desk.edition(paper, T0.date())
    assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
    row = db.session.scalars(select(Subscriber)).one()
    row.confirmed_at = T0  # confirmed: its preferences page answers 200 (a link from an alert)
    db.session.commit()
    return PaperData.of(piece, "localhost", T0.date(), section_slug=desk.section(paper, "World").slug,
                        persona_slug=desk.persona(paper).slug, subscriber=row)


def assert_secure_headers(response, url: str, frameable: bool) -> None:
    headers = response.headers
    assert response.status_code < 500, (url, response.status_code)
    assert headers["X-Content-Type-Options"] == "nosniff", url
    expected = "no-referrer" if url.startswith(NO_REFERRER) else "strict-origin-when-cross-origin"
    assert headers["Referrer-Policy"] == expected, url
    assert "Set-Cookie" not in headers, url
    assert "Strict-Transport-Security" not in headers, url  # plain http
    if response.status_code == 304:
        return  # merged into the stored answer, whose headers stand (security.add_headers)
    policy = headers["Content-Security-Policy"]
    assert "default-src" in policy, url
    if frameable:
        assert "frame-ancestors *" in policy and "X-Frame-Options" not in headers, url
        assert "script-src" not in policy, url  # default-src 'none': the embeds run no script
    else:
        assert "frame-ancestors 'none'" in policy and headers["X-Frame-Options"] == "DENY", url
    if response.mimetype == "text/html":
        assert "base-uri" in policy and "form-action" in policy, url
    if response.mimetype == "text/html" and not frameable:
        assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        assert "object-src 'none'" in policy


def test_every_get_route_and_its_304_carry_the_headers(app, client, desk):
    data = site(client, desk)
    seen = set()
    for _, rule in rules(app, {"GET"}):
        for url in urls_for(rule, data):
            response = client.get(url)
            frameable = (rule.endpoint, url.partition("?")[2]) in FRAMEABLE
            assert_secure_headers(response, url, frameable)
            seen.add(rule.endpoint)
            if "ETag" in response.headers:
                again = client.get(url, headers={"If-None-Match": response.headers["ETag"]})
                assert again.status_code == 304, url
                assert_secure_headers(again, url, frameable)
                again.close()
            response.close()
    assert {"pages.home", "embed.card", "feeds.rss", "media.avatar", "static"} <= seen


def test_error_pages_carry_them_too(app, client, desk):
    site(client, desk)
    answers = {
        "/stories/no-such-story": client.get("/stories/no-such-story"),          # 404 page
        "/api/v1/stories/nope": client.get("/api/v1/stories/nope"),              # 404 problem
        "/embed/nope": client.get("/embed/nope"),                                # frameable 404
        "/masthead (POST)": client.post("/masthead"),                            # 405 page
        "/api/v1/search": client.get("/api/v1/search?q="),                       # 400 problem
        "/api/v1/config": client.get("/api/v1/config"),                          # 401 problem
        "/api/v1 (bad key)": client.get("/api/v1", headers={"X-Desk-Key": "x"}), # 401 problem
        "unknown host": client.get("/", base_url="http://nowhere.localhost"),    # 404 page
        "/subscribe (413)": client.post("/subscribe", data=b"x" * 70_000,
                                        content_type="application/x-www-form-urlencoded"),
    }
    for url, response in answers.items():
        assert response.status_code >= 400, url
        assert_secure_headers(response, url, frameable=url == "/embed/nope")
        if url != "/embed/nope":  # the card's own 404 page, not an error handler's
            assert response.headers["Cache-Control"] == "no-store", url


def test_hsts_over_https_only(app, client, desk):
    data = site(client, desk)
    for _, rule in rules(app, {"GET"}):
        for url in urls_for(rule, data)[:1]:
            secure = client.get(url, base_url="https://localhost")
            assert secure.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains", url
            secure.close()
    # Without a trusted proxy (TRUSTED_PROXIES=0) a forwarded scheme is not believed.
    spoofed = client.get("/", headers={"X-Forwarded-Proto": "https"})
    assert "Strict-Transport-Security" not in spoofed.headers


def test_hsts_from_a_trusted_proxy(make_app, client, desk):
    site(client, desk)
    proxied = make_app(CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True, TRUSTED_PROXIES=1)
    behind = proxied.test_client()
    secure = behind.get("/api/v1/stories", headers={"X-Forwarded-Proto": "https"})
    assert secure.status_code == 200
    assert secure.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "Strict-Transport-Security" not in behind.get("/api/v1/stories").headers


def test_no_cookie_on_the_readers_posts(client, desk):
    data = site(client, desk)
    answers = [
        client.post("/subscribe", data={"email": "new@example.com", "sections": "World"}),
        client.post("/subscribe/confirm", data={"token": data.confirm_token}),
        client.post("/subscribe/unsubscribe", data={"token": data.unsubscribe_token}),
        client.post("/api/v1/subscribers", json={"email": "other@example.com"}),
        client.options("/api/v1/subscribers", headers={"Origin": "https://elsewhere.example",
                                                       "Access-Control-Request-Method": "POST"}),
    ]
    for response in answers:
        assert response.status_code < 400, response.request.path
        assert "Set-Cookie" not in response.headers


def test_every_public_answer_varies_on_each_key_header(app, client, desk):
    """A shared cache must never hand a keyed request (which may see drafts) a public answer, nor
    the reverse: every public answer, its 304 and a public redirect name each of the key headers
    (web/headers.py KEY_HEADERS, the one list the pipeline and the rate limits read) in `Vary`,
    and an answer to a keyed request is private instead."""
    from web.caching import FORMAT_SALT
    from web.headers import KEY_HEADERS

    data = site(client, desk)
    public = checked_304 = 0
    for _, rule in rules(app, {"GET"}):
        for url in urls_for(rule, data):
            response = client.get(url)
            if "public" not in response.headers.get("Cache-Control", ""):
                response.close()
                continue
            public += 1
            varies = {name.strip() for name in response.headers["Vary"].split(",")}
            assert set(KEY_HEADERS) <= varies, (url, response.headers["Vary"])
            # The pipeline's own 304 (a file's comes from werkzeug's send_file, with no Vary).
            if response.headers.get("ETag", "").endswith(f'.{FORMAT_SALT}"'):
                again = client.get(url, headers={"If-None-Match": response.headers["ETag"]})
                assert again.status_code == 304, url
                checked_304 += 1
                assert set(KEY_HEADERS) <= {name.strip() for name in again.headers["Vary"].split(",")}, url
                again.close()
            response.close()
    assert public > 20 and checked_304 > 20  # the walk reached the public routes
    for name in KEY_HEADERS:
        keyed = client.get("/api/v1/stories", headers={name: "Bearer desk_x" if name == "Authorization"
                                                       else "desk_x"})
        assert keyed.status_code == 401 and keyed.headers["Cache-Control"] == "no-store", name
