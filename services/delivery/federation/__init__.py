"""The paper and its AI personas as ActivityPub actors (docs/FEDERATION.md).

    keys.py        the paper's RSA key for HTTP signatures (made lazily, sealed at rest) and its
                   Ed25519 receipt key as a Multikey (FEP-521a)
    documents.py   the JSON documents: WebFinger, NodeInfo, actors, Articles (FEP-b2b8) with a
                   DataIntegrityProof eddsa-jcs-2022 (FEP-8b32), activities, collections
    httpsig.py     draft-cavage HTTP Signatures (rsa-sha256) and the Digest header, both ways
    messagesig.py  RFC 9421 HTTP Message Signatures, both ways (on `http-message-signatures`)
    remote.py      the one outside call on a request path: fetching a sender's key and actor
                   (one budget with DNS, per-origin cap, negative cache, key cache)
    inbox.py       authentication (cheap checks, then the key bound to the actor), then Follow,
                   Undo Follow, Delete of a follower; everything else ignored
    deliveries.py  the change-feed consumer that writes one signed delivery per inbox, and the
                   sender that posts them from `flask worker`
    pings.py       the change-feed consumer of WebSub hub pings and IndexNow URL lists, and
                   their sender
"""
