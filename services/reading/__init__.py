"""Reading: the queries behind the public and keyed lanes (stories, the archive by section and
day, the front document, the cast and masthead, search, ready-to-post short forms, the reader
pages' own queries), the one lookup of each kind (lookups.py) and the per-version memo. Each
function issues a fixed number of SQL statements whatever the number of rows, and returns
rows or plain data; the web layer's schemas give it its wire shape."""
