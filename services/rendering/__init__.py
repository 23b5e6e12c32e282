"""Rendering: turning a paper's data into documents and addresses. `Links` (links.py) builds
every absolute URL from an origin handed in by the caller; prose becomes HTML with its
footnote markers kept; feeds, sitemaps, oEmbed records and embed snippets are built from
rows; avatars and share cards are drawn. Nothing here reads the request."""
