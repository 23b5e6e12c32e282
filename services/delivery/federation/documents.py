"""The ActivityPub documents of a paper, as plain dicts (docs/FEDERATION.md has examples).

URLs under the paper's origin (`links`):

    /ap/paper                     the paper's actor (a `Service`)
    /ap/personas/<slug>           a persona's actor (a `Service`: an automated account)
    <actor>/inbox, /outbox, /followers
    /ap/inbox                     the shared inbox
    /ap/stories/<id>              a piece on air as an `Article` (FEP-b2b8)
    /ap/context.jsonld            the JSON-LD context of the terms ActivityStreams lacks

Every actor publishes the paper's RSA key as `<actor>#main-key` (HTTP signatures) and the paper's
Ed25519 receipt key as the Multikey `<actor>#ed25519-key` (FEP-521a). An Article carries a
`DataIntegrityProof` with the `eddsa-jcs-2022` cryptosuite (FEP-8b32) made with that Ed25519 key
and naming its author's `#ed25519-key`: proof options and document are each RFC 8785
canonicalised and SHA-256 hashed, the signature is over hash(options) || hash(document), and
`proofValue` is "z" + base58btc of it. `created` is the revision's filing time, so a revision's
object (and its proof: Ed25519 is deterministic) is the same bytes every time it is built.

Pure functions of their arguments (the database rows, `links`, the instance secret): the views
and the change-feed consumer build the same documents.
"""
from __future__ import annotations

import hashlib
from datetime import datetime

import rfc8785
from markupsafe import escape

from models import Paper, Persona, Piece, SigningKey
from models.clock import rfc3339
from services.delivery.federation import keys
from services.links import Links
from services.rendering import feeds
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure

AS_CONTEXT = "https://www.w3.org/ns/activitystreams"
SECURITY_CONTEXT = "https://w3id.org/security/v1"
MULTIKEY_CONTEXT = "https://w3id.org/security/multikey/v1"
DATA_INTEGRITY_CONTEXT = "https://w3id.org/security/data-integrity/v1"
PUBLIC = "https://www.w3.org/ns/activitystreams#Public"
ACTIVITY_JSON = "application/activity+json"
CONTEXT_PATH = "/ap/context.jsonld"
PAGE_SIZE = 20
SOFTWARE = "paperdesk"

# The terms our documents use that the standard contexts they name do not define, served at
# CONTEXT_PATH (every @context entry of an Article stays a string, so its proof's @context can
# repeat it exactly). `Multikey` and `publicKeyMultibase` come from MULTIKEY_CONTEXT (protected
# there, so not repeated here); `assertionMethod` is defined by the DID and CID contexts, which an
# actor does not name, so it is defined here, with the IRI Fedify and the Data Integrity spec
# read (without it a JSON-LD consumer drops the actor's Multikey). Mastodon's terms use its
# `toot:` namespace and `as:` for the ones it proposed to ActivityStreams.
EXTRA_TERMS = {
    "@context": {
        "as": "https://www.w3.org/ns/activitystreams#",
        "sec": "https://w3id.org/security#",
        "toot": "http://joinmastodon.org/ns#",
        "schema": "http://schema.org/",
        "assertionMethod": {"@id": "sec:assertionMethod", "@type": "@id", "@container": "@set"},
        "manuallyApprovesFollowers": "as:manuallyApprovesFollowers",
        "sensitive": "as:sensitive",
        "Hashtag": "as:Hashtag",
        "discoverable": "toot:discoverable",
        "indexable": "toot:indexable",
        "featured": {"@id": "toot:featured", "@type": "@id"},
        "featuredTags": {"@id": "toot:featuredTags", "@type": "@id"},
        "attributionDomains": {"@id": "toot:attributionDomains", "@type": "@id"},
        "digitalSourceType": {"@id": "schema:digitalSourceType", "@type": "@id"},
        "PropertyValue": "schema:PropertyValue",
        "value": "schema:value",
    }
}


def context_url(links: Links) -> str:
    return links.absolute(CONTEXT_PATH)


def article_context(links: Links) -> list[str]:
    """An Article's and an activity's @context: ActivityStreams, Data Integrity, our terms."""
    return [AS_CONTEXT, DATA_INTEGRITY_CONTEXT, context_url(links)]


# ----------------------------------------------------------------------------- addresses


def paper_actor(links: Links) -> str:
    return links.absolute("/ap/paper")


def persona_actor(links: Links, slug: str) -> str:
    return links.absolute(f"/ap/personas/{slug}")


def actor_of(links: Links, local: str) -> str:
    """The actor id of `local` (models.PAPER_ACTOR "" for the paper, else a persona's slug)."""
    return persona_actor(links, local) if local else paper_actor(links)


def article_id(links: Links, piece_id: int) -> str:
    return links.absolute(f"/ap/stories/{piece_id}")


def shared_inbox(links: Links) -> str:
    return links.absolute("/ap/inbox")


# ----------------------------------------------------------------------------- discovery


def handle(links: Links, name: str) -> str:
    """The fediverse handle of the paper's (`name`: its slug) or a persona's account,
    `@name@host` (the host with its port, as WebFinger's `acct:` answers it)."""
    return f"@{name}@{links.host}"


def webfinger(subject: str, actor: str, page: str) -> dict:
    """The JRD (RFC 7033) of `subject` (`acct:name@host`) whose actor is `actor`."""
    return {"subject": subject, "aliases": [actor, page],
            "links": [{"rel": "self", "type": ACTIVITY_JSON, "href": actor},
                      {"rel": "http://webfinger.net/rel/profile-page", "type": "text/html", "href": page}]}


NODEINFO_VERSIONS = ("2.0", "2.1")


def nodeinfo_schema(version: str) -> str:
    """The `rel` (and profile) naming NodeInfo `version`'s schema."""
    return f"http://nodeinfo.diaspora.software/ns/schema/{version}"


def nodeinfo_index(links: Links) -> dict:
    """The NodeInfo discovery document: one link per version served (Takahe reads 2.0, most
    others 2.1)."""
    return {"links": [{"rel": nodeinfo_schema(version), "href": links.absolute(f"/nodeinfo/{version}")}
                      for version in NODEINFO_VERSIONS]}


def nodeinfo(paper: Paper, *, schema: str, version: str, personas: int, pieces: int) -> dict:
    """NodeInfo `schema` (one of NODEINFO_VERSIONS) of the paper's host: actors (the paper and
    its personas) as users, its pieces on air as local posts, registrations closed. 2.0 has no
    `software.homepage` (2.1 added it), otherwise the two are the same."""
    software = {"name": SOFTWARE, "version": version}
    if schema != "2.0":
        software["homepage"] = "https://github.com/paperdesk/paperdesk"
    return {"version": schema, "software": software,
            "protocols": ["activitypub"], "services": {"inbound": [], "outbound": ["rss2.0"]},
            "openRegistrations": False,
            "usage": {"users": {"total": personas + 1, "activeMonth": personas + 1,
                                "activeHalfyear": personas + 1}, "localPosts": pieces},
            "metadata": {"nodeName": paper.nameplate, "nodeDescription": paper.description or paper.motto}}


# ----------------------------------------------------------------------------- actors


def _keys_of(actor: str, rsa_pem: str, receipt: SigningKey | None) -> dict:
    out = {"publicKey": {"id": f"{actor}#main-key", "owner": actor, "publicKeyPem": rsa_pem}}
    if receipt is not None:
        out["assertionMethod"] = [{"id": f"{actor}#ed25519-key", "type": "Multikey", "controller": actor,
                                   "publicKeyMultibase": keys.multikey(receipt.public_key)}]
    return out


def _actor(links: Links, actor: str, **fields) -> dict:
    return {"@context": [AS_CONTEXT, SECURITY_CONTEXT, MULTIKEY_CONTEXT, context_url(links)],
            "id": actor, **fields,
            "inbox": f"{actor}/inbox", "outbox": f"{actor}/outbox", "followers": f"{actor}/followers",
            "endpoints": {"sharedInbox": shared_inbox(links)},
            "manuallyApprovesFollowers": False, "discoverable": True, "indexable": True,
            "attributionDomains": [links.host_name]}


def paper_document(paper: Paper, links: Links, *, rsa_pem: str, receipt: SigningKey | None, icon: str) -> dict:
    """The paper's actor: a `Service` named for its nameplate, with its motto and the
    statement that every byline is a declared AI persona as its summary."""
    actor = paper_actor(links)
    summary = " ".join(part for part in (paper.motto, paper.description) if part)
    return _actor(links, actor, type="Service", preferredUsername=paper.slug, name=paper.nameplate,
                  summary=f"<p>{escape(summary)}</p><p>{escape(feeds.paper_disclosure(paper.nameplate))}</p>",
                  url=links.home(), icon={"type": "Image", "mediaType": "image/png", "url": icon},
                  published=rfc3339(paper.created_at), **_keys_of(actor, rsa_pem, receipt))


def persona_document(paper: Paper, persona: Persona, links: Links, *, rsa_pem: str,
                     receipt: SigningKey | None) -> dict:
    """A persona's actor: a `Service` (Mastodon marks it automated) whose summary says it is
    an AI persona of the paper, with its title, beat and bio."""
    actor = persona_actor(links, persona.slug)
    role = " · ".join(part for part in (persona.title, persona.beat) if part)
    statement = (f"{persona.name} is a declared AI persona of {paper.nameplate}'s masthead: the "
                 "pieces under this byline are written by an AI system, not by a human reporter.")
    summary = "".join(f"<p>{escape(part)}</p>" for part in (statement, role, persona.bio) if part)
    return _actor(links, actor, type="Service", preferredUsername=persona.slug,
                  name=feeds.persona_label(persona.name), summary=summary,
                  url=links.absolute(f"/masthead/{persona.slug}"),
                  icon={"type": "Image", "mediaType": "image/png", "url": links.avatar_png(persona.slug)},
                  attachment=[{"type": "PropertyValue", "name": "Paper", "value": paper.nameplate}],
                  **_keys_of(actor, rsa_pem, receipt))


# ----------------------------------------------------------------------------- objects


def _hash(document: dict) -> bytes:
    return hashlib.sha256(rfc8785.dumps(document)).digest()


def prove(document: dict, sign, verification_method: str, created: datetime) -> dict:
    """`document` with a `proof` added: DataIntegrityProof, eddsa-jcs-2022, proofPurpose
    assertionMethod, signed by `sign(bytes) -> 64-byte Ed25519 signature` (the receipt key:
    keys.receipt_signer)."""
    options = {"type": "DataIntegrityProof", "cryptosuite": "eddsa-jcs-2022",
               "verificationMethod": verification_method, "proofPurpose": "assertionMethod",
               "created": rfc3339(created)}
    if "@context" in document:
        options = {"@context": document["@context"], **options}
    signature = sign(_hash(options) + _hash(document))
    return {**document, "proof": {**options, "proofValue": "z" + keys.base58btc(signature)}}


def article(paper: Paper, piece: Piece, links: Links, *, receipt: SigningKey | None, secret: str) -> dict:
    """The Article of `piece` (section, persona and cited facts loaded): headline as `name`,
    dek and AI disclosure as `summary`, the prose with its cited facts as a numbered list as
    `content`, a `preview` Note for microblog readers, the section as `context` and a Hashtag,
    IPTC `digitalSourceType`, and (with a receipt key) the proof. Raises what
    keys.receipt_signer raises (SeedLocked when `secret` does not open the receipt seed)."""
    url = links.story_page(piece.slug)
    author = persona_actor(links, piece.persona.slug)
    said = disclosure(piece.persona.name, paper.nameplate)
    section_url = links.section_page(piece.section.slug)
    head = (f'<p class="byline">By {escape(feeds.persona_label(piece.persona.name))}. '
            f"<em>{escape(said)}</em></p>")
    document = {
        "@context": article_context(links),
        "id": article_id(links, piece.id), "type": "Article", "attributedTo": author,
        "name": piece.headline,
        "summary": "".join(f"<p>{escape(part)}</p>" for part in (piece.dek, said) if part),
        "content": head + feeds.render_prose(piece, url), "mediaType": "text/html",
        "url": url, "published": rfc3339(piece.on_air_at or piece.filed_at),
        "to": [PUBLIC], "cc": [f"{author}/followers", f"{paper_actor(links)}/followers"],
        "context": section_url,
        "tag": [{"type": "Hashtag", "name": "#" + "".join(piece.section.name.split()), "href": section_url}],
        "preview": {"type": "Note", "attributedTo": author,
                    "content": (f'<p><a href="{escape(url)}">{escape(piece.headline)}</a></p>'
                                + (f"<p>{escape(piece.dek)}</p>" if piece.dek else "")
                                + f"<p>{escape(said)}</p>")},
        "digitalSourceType": DIGITAL_SOURCE_TYPE, "sensitive": False,
    }
    if piece.rev > 1:
        document["updated"] = rfc3339(piece.updated_at)
    image = links.media(piece.image)
    if image:
        document["image"] = {"type": "Image", "url": image}
    if receipt is None:
        return document
    return prove(document, keys.receipt_signer(receipt, secret), f"{author}#ed25519-key", piece.updated_at)


def tombstone(links: Links, piece_id: int, at: datetime) -> dict:
    """The Tombstone of a pulled Article (in a Delete, and at the Article's id: 410)."""
    return {"@context": AS_CONTEXT, "id": article_id(links, piece_id), "type": "Tombstone", "formerType": "Article",
            "deleted": rfc3339(at)}


# ----------------------------------------------------------------------------- activities


def create(links: Links, document: dict, at: datetime) -> dict:
    """`Create` of an Article by its author, addressed as the Article is."""
    return {"@context": article_context(links), "id": f"{document['id']}#create-{int(at.timestamp())}",
            "type": "Create", "actor": document["attributedTo"], "published": rfc3339(at),
            "to": document["to"], "cc": document["cc"], "object": document}


def announce(links: Links, object_id: str, author: str, at: datetime) -> dict:
    """The paper's `Announce` (boost) of an Article by one of its personas."""
    actor = paper_actor(links)
    return {"@context": article_context(links), "id": f"{object_id}#announce-{int(at.timestamp())}",
            "type": "Announce", "actor": actor, "published": rfc3339(at), "to": [PUBLIC],
            "cc": [f"{actor}/followers", author], "object": object_id}


def update(links: Links, document: dict, rev: int, at: datetime) -> dict:
    return {"@context": article_context(links), "id": f"{document['id']}#update-{rev}", "type": "Update",
            "actor": document["attributedTo"], "published": rfc3339(at),
            "to": document["to"], "cc": document["cc"], "object": document}


def delete(links: Links, author: str, piece_id: int, seq: int, at: datetime) -> dict:
    return {"@context": article_context(links), "id": f"{article_id(links, piece_id)}#delete-{seq}",
            "type": "Delete", "actor": author, "published": rfc3339(at),
            "to": [PUBLIC], "cc": [f"{author}/followers", f"{paper_actor(links)}/followers"],
            "object": tombstone(links, piece_id, at)}


def accept(links: Links, local: str, follow: dict) -> dict:
    """`Accept` of a Follow of `local`'s actor, embedding the Follow as received."""
    actor = actor_of(links, local)
    follow_id = follow.get("id") if isinstance(follow.get("id"), str) else ""
    digest = hashlib.sha256(f"{follow_id}|{follow.get('actor')}".encode()).hexdigest()[:16]
    return {"@context": AS_CONTEXT, "id": f"{actor}#accept-{digest}", "type": "Accept", "actor": actor,
            "object": {key: follow[key] for key in ("id", "type", "actor", "object") if key in follow}}


# ----------------------------------------------------------------------------- collections


def collection(collection_id: str, total: int, *, paged: bool) -> dict:
    """An OrderedCollection of `total` items, with `first` (`?page=1`) when `paged`."""
    out = {"@context": AS_CONTEXT, "id": collection_id, "type": "OrderedCollection", "totalItems": total}
    if paged:
        out["first"] = f"{collection_id}?page=1"
    return out


def collection_page(collection_id: str, page: int, items: list[dict], *, more: bool) -> dict:
    out = {"@context": AS_CONTEXT, "id": f"{collection_id}?page={page}",
           "type": "OrderedCollectionPage", "partOf": collection_id, "orderedItems": items}
    if more:
        out["next"] = f"{collection_id}?page={page + 1}"
    if page > 1:
        out["prev"] = f"{collection_id}?page={page - 1}"
    return out


