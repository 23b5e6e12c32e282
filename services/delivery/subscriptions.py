"""The subscriber list: double opt-in, confirm and unsubscribe tokens, the admin batch, counts
(docs/API.md "subscribe"; docs/ALERTS.md).

Tokens are itsdangerous signatures of `[paper id, subscriber id, email]` with one salt per
purpose. Confirm tokens expire after 7 days; unsubscribe tokens never do (an old alert's link
must keep working); preferences tokens (the "Manage your alerts" link of every alert) after
PREFERENCES_MAX_AGE, and are void once the address leaves the list. The confirm email is
written to the outbox in the subscribe's own transaction, at most one per address per
CONFIRM_INTERVAL, and sent by `flask worker` (services/delivery/outbox.py): no request
talks to SMTP. Functions flush; the request or the CLI commits once.
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parseaddr

from email_validator import EmailNotValidError, EmailSyntaxError, validate_email
from flask import current_app, render_template
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import Boolean, case, func, literal, or_, select, update
from sqlalchemy import insert as sql_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm.attributes import set_committed_value

from extensions import db
from models import PAUSED_INDEFINITELY, OutboxMessage, Paper, Section, Subscriber
from services.delivery import mail, queues, webhooks
from services.errors import Invalid
from services.links import Links

log = logging.getLogger("paperdesk.subscriptions")

CONFIRM_MAX_AGE = 7 * 24 * 3600
CONFIRM_INTERVAL = timedelta(minutes=10)
SALTS = {"confirm": "paperdesk.subscriber.confirm", "unsubscribe": "paperdesk.subscriber.unsubscribe",
         "preferences": "paperdesk.subscriber.preferences"}
# A manage link works for a year: alerts are read weeks later, and each new alert brings a
# fresh one. A reader paused for longer still has the unsubscribe link, which never expires.
PREFERENCES_MAX_AGE = 366 * 24 * 3600
# The pauses the preference centre offers; "until I resume" is PAUSED_INDEFINITELY. An exact
# `paused_until` through the API may lie at most MAX_PAUSE ahead.
PAUSES = ("week", "month", "indefinitely")
MAX_PAUSE = timedelta(days=366)


@dataclass
class Preferences:
    cadence: str = "daily"
    sections: list[str] | None = None
    cast: bool = True


# RFC 5321 section 4.5.3.1.1; email-validator lets one more character through.
MAX_LOCAL_PART = 64


def normalize_email(text: str) -> str:
    """The form an address is stored and counted in: email-validator's normalised form (syntax
    only, no DNS: NFC) with the domain in ASCII (IDNA, so sending needs SMTPUTF8 only for a
    non-ASCII local part), lower-cased. `Foo@Example.COM` and `foo@bücher.example` become
    `foo@example.com` and `foo@xn--bcher-kva.example`. Raises
    `email_validator.EmailNotValidError` for what is not an address, a local part over 64
    characters included."""
    result = validate_email(text, check_deliverability=False)
    if len(result.local_part) > MAX_LOCAL_PART:
        raise EmailSyntaxError(f"The part before the @-sign is longer than {MAX_LOCAL_PART} characters.")
    return (result.ascii_email or f"{result.local_part}@{result.ascii_domain}").lower()


def active_sections(paper: Paper) -> list[str]:
    """The paper's active section names, in the paper's order."""
    return list(db.session.scalars(select(Section.name).where(
        Section.paper_id == paper.id, Section.active.is_(True)).order_by(Section.position, Section.id)))


def check_sections(paper: Paper, names: list[str] | None) -> list[str] | None:
    """Return `names` de-duplicated in the paper's order (None stays None: every section).
    Raises services.errors.Invalid (422, on `sections`) for names that are not active sections
    of the paper."""
    if names is None:
        return None
    known = active_sections(paper)
    unknown = [n for n in dict.fromkeys(names) if n not in known]
    if unknown:
        raise Invalid(errors={"sections": [f"Unknown section(s): {', '.join(unknown)}"]})
    return [n for n in known if n in set(names)]


# --- tokens -------------------------------------------------------------------------------

def _serializer(purpose: str) -> URLSafeTimedSerializer:
    return _serializer_for(current_app.config["SECRET_KEY"], purpose)


@functools.lru_cache(maxsize=16)
def _serializer_for(secret: str, purpose: str) -> URLSafeTimedSerializer:
    # One per secret and purpose: send-alerts signs an unsubscribe link per message.
    return URLSafeTimedSerializer(secret, salt=SALTS[purpose])


def make_token(purpose: str, subscriber: Subscriber) -> str:
    """A signed token for `purpose` ('confirm' or 'unsubscribe') naming this subscriber.
    Needs an app context: it is signed with `current_app.config["SECRET_KEY"]`."""
    return _serializer(purpose).dumps([subscriber.paper_id, subscriber.id, subscriber.email])


_MAX_AGE = {"confirm": CONFIRM_MAX_AGE, "preferences": PREFERENCES_MAX_AGE}


def read_token(purpose: str, token: str, paper: Paper) -> Subscriber | None:
    """The subscriber a token names on `paper`, or None when the token is bad, expired (confirm:
    7 days; preferences: PREFERENCES_MAX_AGE), for another paper, or older than the row's last
    unsubscribe. A preferences token also needs the address on the list, confirmed since the
    token was signed (one from before an unsubscribe stays void after a re-subscription).
    Needs an app context (SECRET_KEY); at most one query."""
    try:
        payload, signed_at = _serializer(purpose).loads(
            token or "", max_age=_MAX_AGE.get(purpose), return_timestamp=True)
        paper_id, subscriber_id, email = payload
    except (BadSignature, SignatureExpired, ValueError, TypeError):
        return None
    if paper_id != paper.id:
        return None
    row = db.session.get(Subscriber, subscriber_id)
    if row is None or row.paper_id != paper.id or row.email != email:
        return None
    if purpose == "confirm" and row.unsubscribed_at is not None and signed_at <= row.unsubscribed_at:
        return None
    if purpose == "preferences" and (
            row.unsubscribed_at is not None or row.confirmed_at is None
            # itsdangerous keeps whole seconds: a link signed in the second of confirming counts.
            or signed_at < row.confirmed_at.replace(microsecond=0)):
        return None
    return row


def confirm_url(subscriber: Subscriber, *, links: Links) -> str:
    """The confirm link of a confirm email: `{origin}/subscribe/confirm?token=...`."""
    return links.absolute(f"/subscribe/confirm?token={make_token('confirm', subscriber)}")


def unsubscribe_url(subscriber: Subscriber, *, links: Links) -> str:
    """The one-click unsubscribe link of an alert: `{origin}/subscribe/unsubscribe?token=...`."""
    return links.absolute(f"/subscribe/unsubscribe?token={make_token('unsubscribe', subscriber)}")


def preferences_url(subscriber: Subscriber, *, links: Links) -> str:
    """The "Manage your alerts" link of an alert: `{origin}/subscribe/preferences?token=...`."""
    return links.absolute(f"/subscribe/preferences?token={make_token('preferences', subscriber)}")


# The sender when neither MAIL_FROM nor the paper's host gives a valid address (an IP address
# or a reserved name such as `demo.localhost` is no mail domain).
FALLBACK_SENDER = "alerts@localhost.localdomain"


def parse_mail_from(text: str) -> tuple[str, str] | None:
    """MAIL_FROM as `(display name, address)`: `"Paper Desk <alerts@example.com>"` ->
    `("Paper Desk", "alerts@example.com")`, a bare address -> `("", address)`, empty -> None.
    The address is checked by email-validator (syntax only, no DNS) and given in its
    normalised form. Raises ValueError, naming the setting and the reason."""
    text = (text or "").strip()
    if not text:
        return None
    if mail.one_line(text) != text:
        raise ValueError(f"MAIL_FROM {text!r} must be one line")
    name, address = parseaddr(text)
    if not address or "@" not in address:
        raise ValueError(f"MAIL_FROM {text!r} must be an address, e.g. \"Paper Desk <alerts@example.com>\"")
    try:
        address = validate_email(address, check_deliverability=False).normalized
    except EmailNotValidError as exc:
        raise ValueError(f"MAIL_FROM {text!r} is not a valid address: {exc}") from exc
    return name, address


def sender(paper: Paper, *, links: Links) -> tuple[str, str]:
    """`(display name, address)` of the paper's mail. MAIL_FROM when set (its name, else the
    nameplate); else the nameplate and `alerts@<host>`, the host of `links` without its port
    (a host without a dot, `localhost`, gets `.localdomain`) when email-validator takes that
    address, else FALLBACK_SENDER. Needs an app context (MAIL_FROM, checked at startup)."""
    configured = parse_mail_from(current_app.config.get("MAIL_FROM", ""))
    if configured is not None:
        return configured[0] or paper.nameplate, configured[1]
    host = links.host_name.strip("[]")
    address = f"alerts@{host if '.' in host else host + '.localdomain'}"
    try:
        validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        address = FALLBACK_SENDER
    return paper.nameplate, address


def sender_address(paper: Paper, *, links: Links) -> str:
    """The address alone of `sender()`."""
    return sender(paper, links=links)[1]


def list_id(paper: Paper, *, links: Links) -> str:
    """RFC 2919 List-Id: `The Demo Times alerts <alerts.demo.<host>>`."""
    domain = sender_address(paper, links=links).split("@", 1)[1]
    return f"{paper.nameplate} alerts <alerts.{paper.slug}.{domain}>"


# --- subscribing ---------------------------------------------------------------------------

def _upsert(paper: Paper, email: str, prefs: Preferences, now: datetime, *, admin: bool) -> Subscriber:
    row = db.session.scalar(select(Subscriber).where(Subscriber.paper_id == paper.id, Subscriber.email == email))
    if row is None:
        try:
            with db.session.begin_nested():
                row = Subscriber(paper_id=paper.id, email=email, cadence=prefs.cadence,
                                 sections=prefs.sections, cast=prefs.cast, created_at=now)
                db.session.add(row)
            return row
        except IntegrityError:  # the same address posted twice at once: use the winner's row
            row = db.session.scalar(select(Subscriber).where(
                Subscriber.paper_id == paper.id, Subscriber.email == email))
    if row.unsubscribed_at is not None:  # back after leaving: starts afresh, not paused
        row.unsubscribed_at, row.confirmed_at, row.confirm_sent_at, row.paused_until = None, None, None, None
    # A stranger may not change a confirmed reader's choices; the admin (the paper) may.
    if row.confirmed_at is None or admin:
        row.cadence, row.sections, row.cast = prefs.cadence, prefs.sections, prefs.cast
    return row


def _upsert_public(paper: Paper, email: str, prefs: Preferences, now: datetime) -> int:
    """One statement whatever the address's state (`INSERT ... ON CONFLICT DO UPDATE ...
    RETURNING id`): a new address is inserted; a left one comes back unconfirmed; a pending
    one takes the new choices; a confirmed one keeps its own (a stranger may not change them).
    Returns the row's id."""
    dialect = db.session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    table = Subscriber.__table__
    stmt = insert(table).values(paper_id=paper.id, email=email, cadence=prefs.cadence, sections=prefs.sections,
                                cast=prefs.cast, created_at=now, bounces=0)
    left = table.c.unsubscribed_at.is_not(None)
    open_to_change = or_(table.c.confirmed_at.is_(None), left)
    stmt = stmt.on_conflict_do_update(index_elements=[table.c.paper_id, table.c.email], set_={
        "unsubscribed_at": None,
        "confirmed_at": case((left, None), else_=table.c.confirmed_at),
        "confirm_sent_at": case((left, None), else_=table.c.confirm_sent_at),
        "paused_until": case((left, None), else_=table.c.paused_until),
        "cadence": case((open_to_change, stmt.excluded.cadence), else_=table.c.cadence),
        "sections": case((open_to_change, stmt.excluded.sections), else_=table.c.sections),
        "cast": case((open_to_change, stmt.excluded.cast), else_=table.c.cast),
    }).returning(table.c.id)
    return db.session.execute(stmt).scalar_one()


def subscribe(paper: Paper, email: str, prefs: Preferences, now: datetime, *, links: Links) -> None:
    """Public subscribe: add or refresh an unconfirmed row and put the confirm email in the
    outbox (services/delivery/outbox.py; `flask worker` sends it), unless one was queued
    in the last 10 minutes or the address is already confirmed; its links under `links`.

    Three statements whatever the address's state (new, pending, confirmed, left): the upsert,
    the conditional claim UPDATE, the outbox INSERT (which writes a row only when the claim
    won). No SMTP, no template: the answer's time and its queries tell nobody whether the
    address subscribes. The caller commits."""
    row_id = _upsert_public(paper, email, prefs, now)
    claimed = _claim_confirm(row_id, now)
    enqueue_confirm(paper.id, row_id, now, links=links, when=claimed)


def subscribe_batch(paper: Paper, emails: list[str], prefs: Preferences, now: datetime,
                    webhook: str | None = None, *, links: Links) -> list[tuple[Subscriber, str | None]]:
    """Admin subscribe: each address gets a row (joining only on its click) and a confirm
    email (links under `links`, sent once the caller commits); with `webhook`, each row gets
    that URL and its own fresh secret. Flushes. Returns (row, secret or None) per distinct
    address, in the given order."""
    result = []
    for email in dict.fromkeys(emails):
        row = _upsert(paper, email, prefs, now, admin=True)
        secret = None
        if webhook:
            secret = webhooks.new_secret()
            row.webhook_url, row.webhook_secret = webhook, secret
        result.append((row, secret))
    db.session.flush()
    for row, _ in result:
        send_confirmation(paper, row, now, links=links)
    return result


def _claim_confirm(row_id: int, now: datetime) -> bool:
    # The database decides who sends: one conditional UPDATE, not a read and a write. Concurrent
    # subscribes of one address all run it; the row lock makes the later ones wait for the
    # first to commit, re-check the condition against its confirm_sent_at and match nothing.
    return db.session.execute(
        update(Subscriber)
        .where(Subscriber.id == row_id, Subscriber.confirmed_at.is_(None),
               or_(Subscriber.confirm_sent_at.is_(None), Subscriber.confirm_sent_at <= now - CONFIRM_INTERVAL))
        .values(confirm_sent_at=now)
        .execution_options(synchronize_session=False)).rowcount == 1


def send_confirmation(paper: Paper, row: Subscriber, now: datetime, *, links: Links) -> bool:
    """Queue the confirm email in the outbox unless the row is confirmed or one was queued
    within CONFIRM_INTERVAL. Returns True when queued. The row must be flushed (the outbox row
    names its id).

    `confirm_sent_at` is claimed by one conditional UPDATE (`WHERE confirm_sent_at IS NULL OR
    confirm_sent_at <= now - CONFIRM_INTERVAL`, rowcount 1 or nothing is queued), so concurrent
    subscribes of one address queue one email whatever their timing. The outbox row is part
    of the caller's transaction: a rollback queues nothing. When the drainer gives the message
    up, it puts `confirm_sent_at` back, so the reader may ask again at once."""
    if row.confirmed_at is not None:
        return False
    claimed = _claim_confirm(row.id, now)
    if claimed:
        set_committed_value(row, "confirm_sent_at", now)
        enqueue_confirm(paper.id, row.id, now, links=links)
    return claimed


def enqueue_confirm(paper_id: int, subscriber_id: int, now: datetime, *, links: Links, when: bool = True) -> None:
    """Write the confirm email of `subscriber_id` to the confirm-mail queue
    (services/delivery/outbox.py), due at `now`, its links under `links.origin`. Exactly one
    INSERT statement whether `when` is true or not (`INSERT ... SELECT ... WHERE :when`): a
    request costs the same whatever the address's state. Needs the session's transaction; the
    caller commits."""
    table = OutboxMessage.__table__
    values = {"paper_id": paper_id, "kind": "confirm", "subscriber_id": subscriber_id,
              "payload": {"origin": links.origin}, "created_at": now, "next_attempt_at": now, "attempts": 0}
    columns = list(values)
    row = select(*(literal(values[name], type_=table.c[name].type) for name in columns)).where(
        literal(bool(when), type_=Boolean()))
    db.session.execute(sql_insert(table).from_select(columns, row))


def confirm_message(row: OutboxMessage):
    """The confirm email an outbox row (kind `confirm`) stands for (services/delivery/outbox.py
    `build`). Raises queues.GiveUp (subscriber or paper gone, no origin) or queues.NotNeeded
    (the address confirmed or unsubscribed since)."""
    subscriber = db.session.get(Subscriber, row.subscriber_id) if row.subscriber_id else None
    paper = db.session.get(Paper, row.paper_id)
    if subscriber is None or paper is None:
        raise queues.GiveUp("the subscriber or the paper is gone")
    if subscriber.confirmed_at is not None or subscriber.unsubscribed_at is not None:
        raise queues.NotNeeded("not sent: the address confirmed or unsubscribed meanwhile")
    try:
        links = Links((row.payload or {})["origin"])
    except (KeyError, TypeError) as exc:
        raise queues.GiveUp("no origin in the payload") from exc
    return compose_confirmation(paper, subscriber, row.created_at, links=links)


def compose_confirmation(paper: Paper, row: Subscriber, now: datetime, *, links: Links):
    """The confirm email of `row` (an `email.message.EmailMessage`), its links under `links`,
    dated `now`. Needs an app context: SECRET_KEY and the mail settings come from
    `current_app.config`, the bodies from templates/mail/confirm.*."""
    link = confirm_url(row, links=links)
    context = {"paper": paper, "link": link, "subscriber": row, "home": links.home()}
    from_name, from_addr = sender(paper, links=links)
    return mail.compose(
        from_name=from_name, from_addr=from_addr, to=row.email,
        subject=f"Confirm your {paper.nameplate} alerts", now=now, list_id=list_id(paper, links=links),
        text=render_template("mail/confirm.txt", **context),
        html=render_template("mail/confirm.html", **context))


def confirm(row: Subscriber, now: datetime) -> Subscriber:
    """Confirm the address (idempotent: the first confirmation time stays). Flushes."""
    if row.confirmed_at is None:
        row.confirmed_at, row.unsubscribed_at = now, None
        db.session.flush()
    return row


def unsubscribe(row: Subscriber, now: datetime) -> Subscriber:
    """Take the address off the list (idempotent). Alerts not yet sent to it are dropped by
    the sender. Flushes."""
    if row.unsubscribed_at is None:
        row.unsubscribed_at, row.confirmed_at = now, None
        db.session.flush()
    return row


# --- the preference centre ----------------------------------------------------------------

def is_paused(row: Subscriber, now: datetime) -> bool:
    """True while the reader's pause lasts (`paused_until` after `now`)."""
    return row.paused_until is not None and row.paused_until > now


def pause_end(choice: str, now: datetime) -> datetime:
    """When a pause picked on the page ends: "week" -> now + 7 days, "month" -> the same time
    one calendar month on (31 January -> the last day of February), "indefinitely" ->
    PAUSED_INDEFINITELY. Raises Invalid (422, on `pause`) for anything else."""
    if choice == "week":
        return now + timedelta(days=7)
    if choice == "month":
        year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        last = (datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=now.tzinfo) - timedelta(days=1)).day
        return now.replace(year=year, month=month, day=min(now.day, last))
    if choice == "indefinitely":
        return PAUSED_INDEFINITELY
    raise Invalid(errors={"pause": [f"Must be one of: {', '.join(PAUSES)}."]})


def change_preferences(paper: Paper, row: Subscriber, now: datetime, changes: dict) -> Subscriber:
    """Apply a reader's own changes (the preference centre, the API with a preferences token).
    `changes` holds any of `cadence` (one of CADENCES, checked by the caller's schema),
    `sections` (names of active sections; None or every one of them: every section, later
    ones too), `cast` (bool) and `paused_until` (an aware time: pause until then, or
    PAUSED_INDEFINITELY; None: resume now). Missing keys stay as they are.

    Raises Invalid (422) for an unknown section (`sections`) or a `paused_until` that is not
    after `now` or lies more than MAX_PAUSE ahead (PAUSED_INDEFINITELY aside). A cadence change
    takes effect from the reader's next window, which starts where the last one ended: no gap,
    no piece twice. A resume keeps the pause's end (now) as the next window's floor, so nothing
    aired while paused is sent. Flushes."""
    if "sections" in changes:
        sections = check_sections(paper, changes["sections"])
        if sections is not None and len(sections) == len(active_sections(paper)):
            sections = None  # every section ticked: later ones too
        row.sections = sections
    if "paused_until" in changes:
        until = changes["paused_until"]
        if until is None:
            if is_paused(row, now):
                row.paused_until = now
        elif until != PAUSED_INDEFINITELY and not now < until <= now + MAX_PAUSE:
            raise Invalid(errors={"paused_until": [
                "Must be after now and at most 366 days ahead (for longer, pause until you resume)."]})
        else:
            row.paused_until = until
    if "cadence" in changes:
        row.cadence = changes["cadence"]
    if "cast" in changes:
        row.cast = changes["cast"]
    db.session.flush()
    return row


def preferences_of(paper: Paper, row: Subscriber, now: datetime) -> dict:
    """The reader's preferences as the API answers them: `{email, cadence, sections (every
    active section when the row takes all), cast, paused, paused_until}`; `paused_until` is
    null when not paused or paused until the reader resumes."""
    paused = is_paused(row, now)
    return {"email": row.email, "cadence": row.cadence,
            "sections": row.sections if row.sections is not None else active_sections(paper),
            "cast": row.cast, "paused": paused,
            "paused_until": row.paused_until if paused and row.paused_until != PAUSED_INDEFINITELY else None}


# --- reading -------------------------------------------------------------------------------

def counts(paper: Paper) -> dict:
    """`{count, confirmed}`: addresses on the list (not unsubscribed), and the confirmed ones.
    One aggregate query."""
    count, confirmed = db.session.execute(
        select(func.count(Subscriber.id), func.count(Subscriber.confirmed_at))
        .where(Subscriber.paper_id == paper.id, Subscriber.unsubscribed_at.is_(None))).one()
    return {"count": count, "confirmed": confirmed}


def rows(paper: Paper) -> list[dict]:
    """Subscriber rows for an admin key, oldest first; `webhook` and `webhook_secret` only on
    rows with a webhook. Two queries whatever the number of rows."""
    every = active_sections(paper)
    out = []
    for row in db.session.scalars(select(Subscriber).where(
            Subscriber.paper_id == paper.id, Subscriber.unsubscribed_at.is_(None)).order_by(Subscriber.id)):
        item = {"email": row.email, "confirmed_at": row.confirmed_at, "cadence": row.cadence,
                "sections": row.sections if row.sections is not None else every, "cast": row.cast,
                "last_sent_at": row.last_sent_at, "bounces": row.bounces, "suppressed_at": row.suppressed_at,
                "suppressed_reason": row.suppressed_reason}
        if row.webhook_url:
            item["webhook"], item["webhook_secret"] = row.webhook_url, row.webhook_secret
        out.append(item)
    return out
