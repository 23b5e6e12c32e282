"""The request's one commit point (web/commit.py), the confirm email that waits in the outbox
with its write (services/delivery/outbox.py) and the one error vocabulary (services/errors.py, answered by
web/errors.py): a success commits once; a failed commit never answers 2xx; a 4xx or 5xx writes and
sends nothing."""
from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from extensions import db
from models import Paper, Section, Subscriber
from services import errors
from services.delivery import subscriptions
from services.newsroom import desk as desk_service
from tests.fixtures.keys import auth
from web.errors import PROBLEM_MIME, handle_desk_error

PROBLEM_KEYS = {"type", "title", "status", "detail"}


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    return {"paper": paper, "admin": auth(desk.key(paper, "admin"), "X-Desk-Key")}


def _state() -> tuple:
    state = (db.session.scalar(select(Paper.version)), dict(db.session.scalar(select(Paper.config))),
             db.session.scalar(select(func.count()).select_from(Section)),
             db.session.scalar(select(func.count()).select_from(Subscriber)))
    db.session.rollback()
    return state


def _failing_commit(monkeypatch, exc: Exception) -> None:
    def fail():
        raise exc

    monkeypatch.setattr(db.session, "commit", fail)


def test_a_write_commits_once_and_answers_what_it_wrote(client, newsroom):
    before = _state()
    response = client.post("/api/v1/sections", json={"name": "Sport"}, headers=newsroom["admin"])
    assert response.status_code == 201
    assert response.get_json()["slug"] == "sport"
    version, _, sections, _ = _state()
    assert sections == before[2] + 1 and version > before[0]


def test_a_failed_commit_never_answers_2xx_and_writes_nothing(client, newsroom, monkeypatch):
    before = _state()
    _failing_commit(monkeypatch, OperationalError("COMMIT", {}, Exception("server closed")))
    response = client.post("/api/v1/sections", json={"name": "Sport"}, headers=newsroom["admin"])
    monkeypatch.undo()
    assert response.status_code == 503 and response.mimetype == PROBLEM_MIME
    assert _state() == before


def test_a_refusal_after_a_flush_writes_nothing(client, newsroom, monkeypatch):
    before = _state()
    original = desk_service.update_config

    def update_then_refuse(paper, changes):
        original(paper, changes)  # flushed: the paper's version moved in this transaction
        raise errors.Conflict("refused after the flush")

    monkeypatch.setattr(desk_service, "update_config", update_then_refuse)
    response = client.patch("/api/v1/config", json={"motto": "Changed"}, headers=newsroom["admin"])
    assert response.status_code == 409
    assert response.get_json() == {"type": "about:blank", "title": "Conflict", "status": 409,
                                   "detail": "refused after the flush"}
    assert _state() == before


@time_machine.travel("2026-11-20T12:00:00Z", tick=False)
def test_the_confirm_email_leaves_after_the_commit_and_never_after_a_rollback(client, newsroom, smtp,
                                                                             monkeypatch):
    _failing_commit(monkeypatch, OperationalError("COMMIT", {}, Exception("server closed")))
    failed = client.post("/api/v1/subscribers", json={"email": "a@example.com"})
    monkeypatch.undo()
    assert failed.status_code == 503
    assert smtp.messages == [] and _state()[3] == 0

    original = subscriptions.subscribe

    def subscribe_then_refuse(*args, **kwargs):
        original(*args, **kwargs)  # the row is flushed and its email queued
        raise errors.Invalid(errors={"email": ["refused after the queue"]})

    monkeypatch.setattr(subscriptions, "subscribe", subscribe_then_refuse)
    refused = client.post("/api/v1/subscribers", json={"email": "a@example.com"})
    monkeypatch.undo()
    assert refused.status_code == 422
    assert refused.get_json()["errors"] == {"email": ["refused after the queue"]}
    assert smtp.messages == [] and _state()[3] == 0

    accepted = client.post("/api/v1/subscribers", json={"email": "a@example.com"})
    assert accepted.status_code == 202
    assert len(smtp.to("a@example.com")) == 1


def test_a_batch_sends_one_email_per_address_after_its_commit(client, newsroom, smtp):
    emails = ["one@example.com", "two@example.com"]
    response = client.post("/api/v1/subscribers", json={"emails": emails}, headers=newsroom["admin"])
    assert response.status_code == 202
    assert sorted(m["To"] for m in smtp.messages) == emails


def test_a_confirm_email_the_mailer_refused_may_be_asked_for_again_at_once(client, newsroom, smtp):
    smtp.refuse.add("c@example.com")
    with time_machine.travel("2026-11-20T12:00:00Z", tick=False) as clock:
        assert client.post("/api/v1/subscribers", json={"email": "c@example.com"}).status_code == 202
        assert smtp.messages == []
        row = db.session.scalars(select(Subscriber)).one()
        assert row.confirm_sent_at is None  # put back: the mail did not leave
        db.session.rollback()
        smtp.refuse.clear()
        clock.shift(timedelta(minutes=1))
        assert client.post("/api/v1/subscribers", json={"email": "c@example.com"}).status_code == 202
        assert len(smtp.to("c@example.com")) == 1
        assert db.session.scalars(select(Subscriber)).one().confirm_sent_at is not None
        db.session.rollback()


def test_the_form_page_refusal_writes_nothing(client, newsroom, smtp):
    response = client.post("/subscribe", data={"email": "d@example.com", "sections": "Nowhere"})
    assert response.status_code == 422 and "Unknown section(s): Nowhere" in response.get_data(as_text=True)
    assert smtp.messages == [] and _state()[3] == 0


# ----------------------------------------------------------------------------- the vocabulary


def test_every_desk_error_is_a_problem_on_machine_routes_and_a_page_elsewhere(app):
    raised = [errors.BadRequest("odd value"), errors.Unauthorized(), errors.Forbidden("not you"),
              errors.NotFound("No such piece on this paper."),
              errors.Conflict("a section named 'World' already exists"),
              errors.Invalid(errors={"sections": ["Unknown section(s): X"]})]
    with app.test_request_context("/api/v1/x"):
        for exc in raised:
            response = handle_desk_error(exc)
            body = response.get_json(force=True)
            assert response.mimetype == PROBLEM_MIME and response.status_code == exc.status
            assert set(body) == PROBLEM_KEYS | ({"errors"} if exc.errors else set())
            assert (body["status"], body["detail"]) == (exc.status, exc.detail)
            assert response.headers["Cache-Control"] == "no-store"
        assert handle_desk_error(raised[1]).headers["WWW-Authenticate"] == 'Bearer realm="desk"'
        assert handle_desk_error(raised[-1]).get_json()["errors"] == {"sections": ["Unknown section(s): X"]}
    with app.test_request_context("/stories/x"):
        page = handle_desk_error(raised[3])
        assert page.status_code == 404 and page.mimetype == "text/html"
        assert "No such piece on this paper." in page.get_data(as_text=True)


def test_str_of_an_error_names_its_fields():
    exc = errors.Invalid("The filing failed validation; nothing was written.",
                         errors={"prose": ["marker [^3] has no cited fact 3"]})
    assert str(exc) == ("The filing failed validation; nothing was written. "
                        "(prose: marker [^3] has no cited fact 3)")
    assert str(errors.NotFound()) == "There is nothing here."
