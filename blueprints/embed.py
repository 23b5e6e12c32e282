"""`/embed/{id}` (a story card for an iframe) and `/oembed` (its oEmbed 1.0 record).

Both sit outside `/api/v1` but are documented in the OpenAPI document (docs/API.md "the document").
The card alone may be framed by any site (security.allow_framing).
"""
from __future__ import annotations

from flask import Response, abort, g, make_response, render_template
from flask_smorest import Blueprint

from schemas.embed import OEmbedOut, OEmbedQuery
from services.reading import stories
from services.rendering import embeds
from services.rendering.prose import disclosure
from web import caching, policy, security
from web.links import links

bp = Blueprint("embed", __name__, description="Embeddable story cards and oEmbed.")

HTML = {"text/html": {"schema": {"type": "string"}}}


@bp.route("/embed/<string(maxlength=200):id>")
@bp.doc(operationId="getEmbedCard", responses={
    "200": {"description": "A self-contained HTML card: headline, picture, byline with its "
                           "AI-persona disclosure and the paper's name, each linking to the story "
                           "page in a new tab. Inline CSS only; no script, cookie or third-party "
                           "request. Any site may frame it (`frame-ancestors *`).",
            "content": {"text/html": {"schema": {"type": "string"}, "example": (
                '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Rates rise '
                'again</title></head><body><article class="card"><a href="https://demo.example.org/'
                'stories/rates-rise-again" target="_blank">Rates rise again</a></article></body>'
                '</html>')}}},
    "404": {"description": "No such piece on air on this paper: an HTML page (also frameable).",
            "content": HTML},
})
def card(id: str):
    """A story card to put in an iframe, by story id or slug

    An HTML page, never JSON: put it in an `<iframe>`. A piece that is not on air gets a
    frameable 404 page.
    """
    piece = stories.find_card(g.paper, id, now=caching.request_now())
    if piece is None:
        html = render_template("embed/missing.html", paper=g.paper, home=links().home())
        return security.allow_framing(make_response(html, 404), "embed")
    caching.tag_piece(piece)
    caching.depends_on_piece(piece)
    html = render_template(
        "embed/card.html", piece=piece, paper=g.paper, story_url=links().story_page(piece.slug),
        picture=embeds.picture(piece, g.paper.nameplate, links=links()),
        disclosure=disclosure(piece.persona.name, g.paper.nameplate), corrected=embeds.corrected_at(piece),
    )
    response = make_response(html)
    # A card is for frames, not for search results: the story page is the canonical copy.
    response.headers["X-Robots-Tag"] = "noindex"
    return security.allow_framing(response, "embed")


@bp.route("/oembed")
@policy.route(cors="read", problems=True)  # a site owner's page asks it from the browser
@bp.doc(operationId="getOembed")
@bp.arguments(OEmbedQuery(), location="query", as_kwargs=True)
@bp.response(200, OEmbedOut)
@bp.alt_response(404, description="`url` is not the page of a piece on air on this paper.")
@bp.alt_response(501, description="`format` is neither `json` nor `xml`: oEmbed 1.0's answer "
                                  "for a format the provider does not implement.")
@bp.doc(responses={200: {"content": {"text/xml": {"schema": {
    "type": "string", "description": "With `format=xml`: the same record as oEmbed XML."},
    "example": ('<?xml version="1.0" encoding="utf-8" standalone="yes"?><oembed><version>1.0'
                '</version><type>rich</type><title>Rates rise again</title></oembed>')}}}})
def oembed(url: str, format: str, maxwidth: int | None = None, maxheight: int | None = None):
    """The oEmbed 1.0 record (type rich) of a story page on this paper, as JSON or XML

    `url` is a story page of this paper; the record's `html` frames `/embed/{id}`, `maxwidth`
    wide (default 480) and as tall as the card, at most `maxheight`. A `maxwidth` above 640
    gets the 640-pixel card (consumers send it as an upper bound), one below 220 the 220-pixel
    card, the smallest there is (likewise a `maxheight` below 200); an empty `format` is
    `json`; the record also carries the
    byline's `disclosure` and `digital_source_type`. `format=xml` answers the same record as XML.
    """
    # `format=` (a form left empty) means the default, as an absent one does.
    format = format or "json"
    # Before the lookup: oEmbed 1.0 says 501 for a format the provider lacks, whatever the url.
    if format not in embeds.FORMATS:
        abort(501, description=f"This provider answers oEmbed in {' and '.join(embeds.FORMATS)} only.")
    piece = embeds.story_from_url(g.paper, url, now=caching.request_now(), links=links())
    if piece is None:
        abort(404, description="url is not the page of a piece on air on this paper.")
    caching.tag_piece(piece)
    caching.depends_on_piece(piece)
    record = embeds.oembed_record(piece, g.paper, maxwidth, maxheight, links=links())
    if format == "xml":
        return Response(embeds.oembed_xml(record), mimetype="text/xml")
    return record
