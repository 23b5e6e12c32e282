"""The reader's subscribe pages: `/subscribe` (the landing form, works without JavaScript),
`/subscribe/confirm`, `/subscribe/unsubscribe` and `/subscribe/preferences` (the preference
centre every alert links to as "Manage your alerts") (docs/API.md "subscribe"; docs/ALERTS.md
"Managing alerts").

Links in emails only ever lead to a page with a button: the confirmation or the unsubscribe
happens on the POST, so a mail scanner that prefetches GET links changes nothing. The same
unsubscribe URL takes RFC 8058's one-click POST (`List-Unsubscribe=One-Click`) and answers 200.
The POSTs commit once, at the commit point (web/commit.py); a 4xx page writes nothing.
"""
from __future__ import annotations

from flask import Blueprint, g, render_template, request
from marshmallow import ValidationError

from models import PAUSED_INDEFINITELY
from models.clock import utcnow
from schemas.subscriber import SubscribeIn
from services.delivery import subscriptions
from services.delivery.alert_content import period_words
from services.errors import Invalid
from web import policy
from web.commit import transactional
from web.links import links

bp = Blueprint("subscribe", __name__)

CADENCES = [("instant", "As pieces go on air"), ("daily", "A daily digest"), ("weekly", "A weekly digest")]
LABELS = {"email": "Email address", "cadence": "How often", "sections": "Sections", "cast": "Video edition",
          "pause": "Pause"}
PAUSE_CHOICES = [("week", "Pause for a week"), ("month", "Pause for a month"), ("indefinitely", "Pause until I resume")]


# The confirm and unsubscribe pages show the address and carry the token (in the URL and the
# form): no cache may keep them, and no link followed from them may send the URL on.
TOKEN_PAGE_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _page(template: str, heading: str, status: int = 200, **context):
    return render_template(template, heading=heading, site=g.paper, show_nav=False, **context), status


def _token_page(template: str, heading: str, status: int = 200, **context):
    """`_page` with TOKEN_PAGE_HEADERS."""
    return (*_page(template, heading, status, **context), TOKEN_PAGE_HEADERS)


def _landing(form: dict, errors: dict | None = None, status: int = 200):
    return _page("subscribe/landing.html", f"{g.paper.nameplate} alerts", status, form=form,
                 errors=errors, labels=LABELS, cadences=CADENCES,
                 sections=subscriptions.active_sections(g.paper))


@bp.get("/subscribe")
def landing():
    """The landing page: email, cadence, sections and cast."""
    return _landing({"email": "", "cadence": "daily", "sections": None, "cast": True})


@bp.post("/subscribe")
@policy.route(limit="subscribe")
@transactional
def subscribe_form():
    """The form's POST (no JavaScript needed): the same rules and answer as the public API."""
    raw = {"email": request.form.get("email", "").strip(),
           "cadence": request.form.get("cadence") or "daily",
           "cast": request.form.get("cast") in ("true", "on", "1")}
    chosen = request.form.getlist("sections")
    form = {**raw, "sections": chosen}
    errors: dict = {}
    try:
        body = SubscribeIn().load({**raw, **({"sections": chosen} if chosen else {})})
    except ValidationError as exc:
        errors = {k: v if isinstance(v, list) else [str(v)] for k, v in exc.messages.items()}
        body = None
    if not chosen:
        errors["sections"] = ["Pick at least one section."]
    if body is not None and not errors:
        try:
            sections = subscriptions.check_sections(g.paper, body.get("sections"))
        except Invalid as exc:  # shown beside its field on the form, not as an error page
            errors.update(exc.errors or {})
    if errors:
        return _landing(form, errors, 422)
    # Every section ticked means "all sections", those added later included.
    if len(sections) == len(subscriptions.active_sections(g.paper)):
        sections = None
    subscriptions.subscribe(g.paper, body["email"], subscriptions.Preferences(
        cadence=body["cadence"], sections=sections, cast=body["cast"]), utcnow(), links=links())
    return _page("subscribe/accepted.html", "Check your inbox")


def _token() -> str:
    return request.form.get("token") or request.args.get("token") or ""


def _invalid():
    return _token_page("subscribe/invalid.html", "This link has expired", 400)


@bp.get("/subscribe/confirm")
@policy.route(cache=False)
def confirm_page():
    """The confirm link's page: a button; a GET never confirms (mail scanners prefetch links)."""
    row = subscriptions.read_token("confirm", _token(), g.paper)
    if row is None:
        return _invalid()
    return _token_page("subscribe/confirm.html", "Confirm your alerts", subscriber=row, token=_token(),
                 done=row.confirmed_at is not None)


@bp.post("/subscribe/confirm")
@policy.route(cache=False, limit="link")
@transactional
def confirm():
    """Confirm the address named by the signed token."""
    row = subscriptions.read_token("confirm", _token(), g.paper)
    if row is None:
        return _invalid()
    subscriptions.confirm(row, utcnow())
    return _token_page("subscribe/confirm.html", "You are subscribed", subscriber=row, done=True)


@bp.get("/subscribe/unsubscribe")
@policy.route(cache=False)
def unsubscribe_page():
    """The unsubscribe link's page: a button; a GET never unsubscribes."""
    row = subscriptions.read_token("unsubscribe", _token(), g.paper)
    if row is None:
        return _invalid()
    return _token_page("subscribe/unsubscribe.html", "Unsubscribe", subscriber=row, token=_token(),
                 done=row.unsubscribed_at is not None)


@bp.post("/subscribe/unsubscribe")
@policy.route(cache=False, limit="link")
@transactional
def unsubscribe():
    """Unsubscribe: the page's button, or the RFC 8058 one-click POST
    (`List-Unsubscribe=One-Click`, token in the URL). Answers 200."""
    row = subscriptions.read_token("unsubscribe", _token(), g.paper)
    if row is None:
        return _invalid()
    subscriptions.unsubscribe(row, utcnow())
    return _token_page("subscribe/unsubscribe.html", "Unsubscribed", subscriber=row, done=True)


# --- the preference centre ------------------------------------------------------------------

def _paused_words(until) -> str:
    if until == PAUSED_INDEFINITELY:
        return "until you resume"
    day = period_words("daily", until.date().isoformat())
    return f"until {day}, {until:%H:%M} UTC"


def _preferences(row, token: str, *, form: dict | None = None, errors: dict | None = None,
                 saved: str | None = None, status: int = 200):
    now = utcnow()
    paused = subscriptions.is_paused(row, now)
    form = form or {"cadence": row.cadence, "sections": row.sections, "cast": row.cast, "pause": ""}
    return _token_page("subscribe/preferences.html", "Your alerts", status, subscriber=row, token=token,
                       form=form, errors=errors, saved=saved, labels=LABELS, cadences=CADENCES,
                       pauses=PAUSE_CHOICES, sections=subscriptions.active_sections(g.paper), paused=paused,
                       paused_words=_paused_words(row.paused_until) if paused else "",
                       unsubscribe_token=subscriptions.make_token("unsubscribe", row))


@bp.get("/subscribe/preferences")
@policy.route(cache=False)
def preferences_page():
    """The "Manage your alerts" page: the reader's choices in a form. A GET changes nothing
    (mail scanners open every link); an invalid, expired or foreign token gets the expired-link
    page (400), as confirm and unsubscribe do."""
    row = subscriptions.read_token("preferences", _token(), g.paper)
    if row is None:
        return _invalid()
    return _preferences(row, _token())


@bp.post("/subscribe/preferences")
@policy.route(cache=False, limit="link")
@transactional
def save_preferences():
    """The form's POST (no JavaScript needed; the token in the hidden field is the credential,
    so no cookie and no CSRF token): `action=save` applies cadence, sections, cast and a pause
    (`pause` = week, month or indefinitely; empty leaves it); `action=resume` ends a pause now.
    A bad value shows the form again with its error (422)."""
    token = _token()
    row = subscriptions.read_token("preferences", token, g.paper)
    if row is None:
        return _invalid()
    now = utcnow()
    if request.form.get("action") == "resume":
        subscriptions.change_preferences(g.paper, row, now, {"paused_until": None})
        return _preferences(row, token, saved="Alerts are on again. News from now on comes in your next alert.")
    chosen = request.form.getlist("sections")
    form = {"cadence": request.form.get("cadence", ""), "sections": chosen,
            "cast": request.form.get("cast") in ("true", "on", "1"), "pause": request.form.get("pause", "")}
    errors: dict = {}
    if form["cadence"] not in dict(CADENCES):
        errors["cadence"] = [f"Must be one of: {', '.join(dict(CADENCES))}."]
    if not chosen:
        errors["sections"] = ["Pick at least one section."]
    if form["pause"] and form["pause"] not in subscriptions.PAUSES:
        errors["pause"] = [f"Must be one of: {', '.join(subscriptions.PAUSES)}."]
    changes = {"cadence": form["cadence"], "sections": chosen, "cast": form["cast"]}
    if form["pause"] and not errors:
        changes["paused_until"] = subscriptions.pause_end(form["pause"], now)
    if not errors:
        try:
            subscriptions.change_preferences(g.paper, row, now, changes)
        except Invalid as exc:  # an unknown section: shown beside its field, not as an error page
            errors.update(exc.errors or {})
    if errors:
        return _preferences(row, token, form=form, errors=errors, status=422)
    saved = "Your choices are saved."
    if subscriptions.is_paused(row, now):
        saved += f" Alerts are paused {_paused_words(row.paused_until)}."
    return _preferences(row, token, saved=saved)
