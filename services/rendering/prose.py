"""Prose -> HTML for reader pages: CommonMark with `[^N]` markers turned into footnote links.

A marker `[^N]` in prose refers to cited fact N; clients render them as footnotes and never strip
them. Each marker becomes `<sup id="ref-N"><a href="#fact-N">[N]</a></sup>` (a repeated marker gets
`id="ref-N-2"`, `-3`, ... so ids stay unique); `render_facts` numbers the list items `fact-N` with a
back-link to the first `ref-N`.

Raw HTML in prose is escaped, never passed through (markdown-it "commonmark" with `html`
off), and markdown-it's link validation drops `javascript:`-style URLs. Link reference
definitions are switched off: with them, a line such as `[^1]: ...` would be swallowed as a
definition and the marker would vanish from the page.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markupsafe import Markup, escape

MARKER = re.compile(r"\[\^([0-9]{1,6})\]")


def _marker_rule(state: StateInline, silent: bool) -> bool:
    """Inline rule: `[^N]` at the cursor becomes a `footnote_marker` token with meta n=N."""
    if state.src[state.pos] != "[":
        return False
    match = MARKER.match(state.src, state.pos)
    if match is None:
        return False
    if not silent:
        token = state.push("footnote_marker", "", 0)
        token.meta = {"n": int(match.group(1))}
        token.content = match.group(0)
    state.pos = match.end()
    return True


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False})
    md.disable("reference")
    # Before "link", so `[^1]` is never read as the start of a link; after "backticks", so a
    # marker written inside a code span stays literal code.
    md.inline.ruler.before("link", "footnote_marker", _marker_rule)
    md.add_render_rule("footnote_marker", _render_marker)
    return md


def _render_marker(self, tokens, idx, options, env) -> str:
    n = tokens[idx].meta["n"]
    seen = env.setdefault("seen", {})
    seen[n] = seen.get(n, 0) + 1
    ref_id = f"ref-{n}" if seen[n] == 1 else f"ref-{n}-{seen[n]}"
    if n not in env["facts"]:
        # Filing refuses such markers; should one exist anyway, keep it visible, unlinked.
        return f'<sup id="{ref_id}" class="marker marker-missing">[{n}]</sup>'
    return (f'<sup id="{ref_id}" class="marker"><a href="#fact-{n}" '
            f'aria-label="Cited fact {n}">[{n}]</a></sup>')


_MD = _build()


@dataclass(frozen=True)
class Rendered:
    """`html`: the prose as safe HTML; `markers`: how many `[^N]` markers it rendered;
    `referenced`: the fact numbers that at least one marker links to."""

    html: Markup
    markers: int
    referenced: frozenset[int]


def render(prose: str, fact_numbers: set[int] | frozenset[int]) -> Rendered:
    """Render Markdown prose to HTML with every `[^N]` as a footnote link to `#fact-N`.

    `fact_numbers` are the cited facts that exist (1..k). Markers for a missing fact stay as
    visible, unlinked `[N]`. Never raises for any input text.
    """
    return _render(prose or "", frozenset(fact_numbers))


# A pure function of its text: a piece's page renders the same prose on every cold read.
@lru_cache(maxsize=256)
def _render(prose: str, fact_numbers: frozenset[int]) -> Rendered:
    env: dict = {"facts": set(fact_numbers)}
    html = _MD.render(prose, env)
    seen: dict[int, int] = env.get("seen", {})
    return Rendered(html=Markup(html), markers=sum(seen.values()),
                    referenced=frozenset(n for n in seen if n in env["facts"]))


def render_facts(facts, referenced: frozenset[int] | set[int]) -> Markup:
    """The ordered list of cited facts: `statement — source, instrument, claim_key`, each item
    `id="fact-N"` with a back-link to its first marker when the prose references it.

    `facts`: objects with `n`, `statement`, `source`, `instrument`, `claim_key`."""
    items = []
    for fact in facts:
        back = ""
        if fact.n in referenced:
            back = (f' <a class="backref" href="#ref-{fact.n}" '
                    f'aria-label="Back to the text at marker {fact.n}">&#8617;&#xFE0E;</a>')
        items.append(
            f'<li id="fact-{fact.n}" value="{fact.n}">'
            f'<span class="statement">{escape(fact.statement)}</span> &mdash; '
            f'<span class="source">{escape(fact.source)}</span>, '
            f'<span class="instrument">{escape(fact.instrument)}</span>, '
            f'<code class="claim-key">{escape(fact.claim_key)}</code>{back}</li>'
        )
    if not items:
        return Markup("")
    return Markup('<ol class="facts">' + "".join(items) + "</ol>")


def plain(prose: str, limit: int = 200) -> str:
    """A one-line text excerpt of prose (markers and Markdown punctuation kept as typed), cut at
    a word boundary to at most `limit` characters; for meta descriptions when a piece has no dek."""
    text = " ".join((prose or "").split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


# --- the byline's disclosure ----------------------------------------------------------------

DISCLOSURE = ("{byline} is an AI persona of {paper}'s masthead, declared as such; this piece "
              "was written by an AI system, not by a human reporter.")

# The same fact for machines: IPTC NewsCodes digital source type "trained algorithmic media"
# (content made by a model trained on sampled content). It stands beside the sentence wherever a
# byline goes (API rows and stories, JSON-LD `digitalSourceType`, feed items, oEmbed), never in
# its place.
DIGITAL_SOURCE_TYPE = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"


def disclosure(byline: str, nameplate: str) -> str:
    """The sentence that must accompany `byline` wherever a piece shows it (API, pages, feeds,
    embed cards): the byline is a declared AI persona of the paper named `nameplate`."""
    return DISCLOSURE.format(byline=byline, paper=nameplate)
