"""Secrets never leave: mask them before anything is written, committed or posted.

Two kinds of secret are masked. Literal values are the contents of the environment
variables that hold keys and tokens (the same idea as GitHub Actions log masking): they
become `[REDACTED]` wherever they appear, also JSON-escaped or URL-encoded (upper- or
lower-case hex, `/` kept or not, `+` for spaces or not). Known token shapes (OpenAI keys,
GitHub tokens, AWS key ids, Slack tokens, JWTs, PEM private keys, bearer and HTTP Basic
credentials) become `[REDACTED:<kind>]` even when no variable named them.

Text is masked before it is cut (`clip`): cutting first leaves a piece of a key that
matches nothing. Where the cut was made before gitsleep saw the text (the last 4096
bytes of an agent's stderr, the first 4000 characters of a transcript message), the
partial word at that edge goes too, and so does any piece of a known secret there.

Text is scanned with its invisible characters removed (zero-width and bidi marks, other
format and control characters: `hostile_text.INVISIBLE`), so a secret split by one is
still found: a reader, a copy-paste or a later cleaning step would join it again. The
mask is laid back onto the original text: the characters around a secret, invisible
ones included, stay as they were; the invisible ones inside it go with it.

Each kind is one compiled alternation, so a diagnostics file of megabytes costs a couple
of regex scans, not one `str.replace` per secret. Literals go first, so a shape match
can never cut a known secret in half and leave its tail behind.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from gitsleep.base.hostile_text import INVISIBLE, without_invisible

REDACTED = "[REDACTED]"
# Tokens a forge or CI hands a job, by variable name: kept out of agents' and checks'
# environments, and refused as `api_key_env` (they would be sent to `base_url`).
FORGE_TOKEN_RE = re.compile(
    r"^(?:(?:GITHUB|GH|GITLAB|GITEA|FORGEJO|BITBUCKET|ACTIONS|CI_JOB)_\w*(?:TOKEN|JWT)\w*"
    r"|SYSTEM_ACCESSTOKEN)$"
)
MIN_SECRET_CHARS = 8  # shorter values would mask ordinary words all over a report
SECRET_NAMES = ("GITHUB_TOKEN", "GH_TOKEN")
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def without_forge_tokens(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """`env` without the forge tokens that open pull requests (GITHUB_TOKEN, GH_TOKEN, CI
    job tokens, ...), except the names in `keep`: what agents run with, since task prompts
    drive them (checks get less: `command_check.check_environment`)."""
    kept = set(keep)
    return {name: value for name, value in env.items()
            if name in kept or not FORGE_TOKEN_RE.match(name.upper())}


# Base64url / token characters, and the characters of an HTTP credential.
_TOKEN = r"[A-Za-z0-9_-]"
_CRED = r"[A-Za-z0-9_.~+/=-]"
# Quotes and spaces between a header's name, its colon and its value, also JSON-escaped.
_QUOTES = r"""(?:[\s"']|\\")*"""
# Not inside a longer word ("task-..." must not look like "sk-..."), but right after an
# escaped newline or tab, as in JSON text ("\\nsk-...").
_START = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"

# (kind, pattern): each pattern matches exactly the text to mask. A `keep` group, when
# present, is text before the secret that stays (the word "Bearer").
SHAPES: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    ("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("openai-key", rf"{_START}sk-{_TOKEN}{{20,}}"),
    ("aws-key-id", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    ("slack-token", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("jwt", rf"eyJ{_TOKEN}{{8,}}\.{_TOKEN}{{4,}}\.{_TOKEN}*"),
    (
        # "Bearer <credential>" (also in an Authorization header). The credential must hold
        # a digit or be long, so prose like "the bearer of bad news" survives.
        "bearer",
        rf"(?i:{_START}(?P<keep>bearer\s+))"
        rf"(?:(?=[A-Za-z_.~+/=-]*[0-9]){_CRED}{{8,}}|{_CRED}{{20,}})",
    ),
    (
        # "Basic <base64 of user:password>". After an Authorization header name any
        # credential goes; alone, it must hold a digit or + / = or be long, so prose
        # like "basic usage" survives.
        "basic-auth",
        rf"(?i:{_START}(?P<keep_basic>(?P<header>authorization{_QUOTES}[:=]{_QUOTES})?basic\s+))"
        r"(?(header)[A-Za-z0-9+/]{4,}={0,2}"
        r"|(?:(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}|[A-Za-z0-9+/]{20,}={0,2}))",
    ),
)

# Every shape starts with one of these characters: checking that first lets the scan skip
# most positions at once (five times faster on plain text). Keep it in step with SHAPES.
_FIRST_CHARS = "-gsAxeBba"
_SHAPE_RE = re.compile(
    f"(?=[{_FIRST_CHARS}])(?:"
    + "|".join(f"(?P<{kind.replace('-', '_')}>{pattern})" for kind, pattern in SHAPES)
    + ")"
)
MARKER_PATTERN = r"\[REDACTED(?::[a-z-]+)?\]"


def _looks_like_path(value: str) -> bool:
    """An existing file path is configuration, not a secret (e.g. `SSH_KEY=~/.ssh/id`)."""
    if not re.match(r"(?:[~./]|[A-Za-z]:[\\/])", value) or any(c.isspace() for c in value):
        return False
    try:
        return os.path.exists(os.path.expanduser(value))
    except (OSError, ValueError):
        return False


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    upper = name.upper()
    return upper in SECRET_NAMES or upper.endswith(SECRET_SUFFIXES)


def secrets_from_env(env: Mapping[str, str], extra_names: Iterable[str] = ()) -> list[str]:
    """Values of the variables that hold secrets: `extra_names` (the config's
    `api_key_env`), GITHUB_TOKEN, GH_TOKEN and every `*_KEY`, `*_TOKEN`, `*_SECRET`,
    `*_PASSWORD`. Values under 8 characters and paths to existing files are skipped."""
    wanted = set(extra_names)
    found: set[str] = set()
    for name, value in env.items():
        if not value or not (name in wanted or is_secret_name(name)):
            continue
        for candidate in (value, value.strip()):
            if len(candidate) >= MIN_SECRET_CHARS and not _looks_like_path(candidate):
                found.add(candidate)
    return sorted(found, key=lambda v: (-len(v), v))


# What URL encoders leave as it is: everything (`quote`'s safe=""), Python's default
# (`/` kept), JavaScript's encodeURIComponent.
_URL_SAFE = ("", "/", "-_.!~*'()")
_HEX_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _variants(value: str) -> set[str]:
    """The spellings a value takes on its way into text: raw, JSON-escaped, URL-encoded
    (each encoding in upper- and lower-case hex: clients and logs print both)."""
    found = set()
    for text in {value, without_invisible(value)[0]}:
        found |= {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
        for safe in _URL_SAFE:
            for encoded in (quote(text, safe=safe), quote_plus(text, safe=safe)):
                found |= {encoded, _HEX_ESCAPE.sub(lambda m: m.group(0).lower(), encoded)}
    return found


def trie_pattern(words: Iterable[str]) -> str:
    """One regex for many literals, shaped as a trie so a scan costs the same for 5 or 5,000
    secrets. Extensions are tried before a word ends, so the longest literal wins."""
    root: dict[str, dict[str, Any]] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def build(node: dict[str, dict[str, Any]]) -> str:
        parts = []
        for char in sorted(k for k in node if k):
            child, run = node[char], char
            while len(child) == 1 and "" not in child:  # a chain with no branch: one literal
                (next_char, child), = child.items()
                run += next_char
            parts.append(re.escape(run) + build(child))
        if not parts:
            return ""
        body = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(root)


ELLIPSIS = "…"
MIN_PIECE_CHARS = 4  # a shorter piece of a known secret at a cut edge is not looked for
# The characters of one word as far as a cut is concerned: a key, a path, a URL, an
# e-mail address, but not the quotes, brackets and separators around them.
_WORD = re.compile(r"""[^\s"'`<>()\[\]{},;|]""")
_MARKER_RE = re.compile(MARKER_PATTERN)
_MARKER_MAX = 64  # longer than any marker: where to look for one across a cut


def clip(text: str, limit: int | None, *, tail: bool = False, cut_start: bool = False,
         cut_end: bool = False, mask: Callable[[str], str] | None = None,
         pieces: Callable[[str, bool], int] | None = None) -> str:
    """`text` masked, then cut to at most `limit` characters (None: no limit), with `…`
    where something went.

    Masking comes first, so a cut never leaves part of a key that no longer matches.
    The partial word at a cut edge goes as well: it may be the start or end of a
    secret nothing could recognise. `cut_start` / `cut_end` say the text was already
    cut there before it got here (a captured tail or head): that edge loses its
    partial word, and the piece of a known secret found there (`pieces`), before
    masking. `tail` keeps the end instead of the start (the end of stderr says most).
    """
    lead = trail = ""
    if cut_start:
        drop = max(_word_run(text, 0, 1), pieces(text, True) if pieces else 0)
        text, lead = text[drop:], (ELLIPSIS if drop else "")
    if cut_end:
        drop = max(_word_run(text, len(text) - 1, -1), pieces(text, False) if pieces else 0)
        text, trail = text[: len(text) - drop], (ELLIPSIS if drop else "")
    if mask is not None:
        text = mask(text)
    text = lead + text + trail
    if limit is None or len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return ELLIPSIS[:limit]
    keep = limit - len(ELLIPSIS)
    cut = len(text) - keep if tail else keep
    window = max(0, cut - _MARKER_MAX)
    for marker in _MARKER_RE.finditer(text, window, cut + _MARKER_MAX):
        if marker.start() < cut < marker.end():  # a marker goes whole or stays whole
            cut = marker.end() if tail else marker.start()
    if tail:
        if 0 < cut < len(text) and _WORD.match(text[cut - 1]):
            cut += _word_run(text, cut, 1)
        return ELLIPSIS + text[cut:]
    if 0 < cut < len(text) and _WORD.match(text[cut]):
        cut -= _word_run(text, cut - 1, -1)
    return text[:cut] + ELLIPSIS


def _word_run(text: str, at: int, step: int) -> int:
    """How many word characters run from `at` in the direction `step`."""
    count = 0
    while 0 <= at < len(text) and _WORD.match(text[at]):
        count, at = count + 1, at + step
    return count


class Redactor:
    """Masks literal secret values and known token shapes in text and nested data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        literals: set[str] = set()
        for value in secrets:
            if len(value) >= MIN_SECRET_CHARS:
                literals |= _variants(value)
        self.literal_count = len(literals)
        self._literals = frozenset(literals)
        self._pieces: tuple[frozenset[str], frozenset[str], int] | None = None
        # Markers already in the text match first and stay as they are, so a secret that
        # happens to be part of a marker ("private-") cannot make redaction non-idempotent.
        self._literal_re = (
            re.compile(f"(?P<marker>{MARKER_PATTERN})|{trie_pattern(literals)}")
            if literals
            else None
        )

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, extra_names: Iterable[str] = ()
    ) -> Redactor:
        """A redactor for the secrets of `env` (default: this process's environment)."""
        return cls(secrets_from_env(os.environ if env is None else env, extra_names))

    def redact(self, text: str) -> str:
        """`text` with every known secret replaced by a marker; idempotent. A secret split
        by invisible characters is masked too (see the module notes)."""
        if not INVISIBLE.search(text):
            return self._mask(text, _plain_sub)
        visible, where = without_invisible(text)
        if self._mask(visible, _plain_sub) == visible:
            return text  # nothing to mask: every character stays, invisible ones too
        tracked = _Tracked(len(visible))
        masked = self._mask(visible, tracked.sub)
        return tracked.restore(text, where, masked)

    def _mask(self, text: str, sub: _Sub) -> str:
        if self._literal_re is not None:
            text, _ = sub(self._literal_re, _literal_marker, text)
        # Until nothing changes: a marker can give the next token the word break it
        # lacked ("AKIA...0sk-..."). Text outside markers shrinks each round, so it ends.
        while True:
            text, count = sub(_SHAPE_RE, _shape_marker, text)
            if not count:
                return text

    def clip(self, text: str, limit: int | None, *, tail: bool = False,
             cut_start: bool = False, cut_end: bool = False,
             mask: Callable[[str], str] | None = None) -> str:
        """`text` redacted (or `mask`ed), then cut to `limit`: see the module's `clip`.
        A piece of one of this redactor's secrets at an edge cut upstream goes too."""
        return clip(text, limit, tail=tail, cut_start=cut_start, cut_end=cut_end,
                    mask=mask or self.redact, pieces=self._piece_at_edge)

    def _piece_at_edge(self, text: str, at_start: bool) -> int:
        """The length of the longest piece of a known secret that `text` starts with
        (the end of a secret) or ends with (its start); 0 when there is none."""
        if not self._literals:
            return 0
        if self._pieces is None:
            heads: set[str] = set()
            tails: set[str] = set()
            for literal in self._literals:
                for size in range(MIN_PIECE_CHARS, len(literal)):
                    heads.add(literal[:size])
                    tails.add(literal[-size:])
            self._pieces = (frozenset(heads), frozenset(tails),
                            max(len(v) for v in self._literals))
        heads_, tails_, longest = self._pieces
        for size in range(min(longest, len(text)), MIN_PIECE_CHARS - 1, -1):
            if (text[:size] in tails_) if at_start else (text[-size:] in heads_):
                return size
        return 0

    def redact_obj(self, obj: Any) -> Any:
        """The same data with every string (dict keys included) redacted."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, Mapping):
            return {self.redact_obj(k): self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.redact_obj(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_obj(v) for v in obj)
        return obj


_Sub = Callable[[re.Pattern[str], Callable[[re.Match[str]], str], str], tuple[str, int]]


def _plain_sub(
    pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str
) -> tuple[str, int]:
    return pattern.subn(repl, text)


class _Tracked:
    """Substitutions that remember, for each character of the result, which character of
    the scanned text it is (-1: part of a marker), to lay the mask back onto the original."""

    def __init__(self, length: int) -> None:
        self.origin = list(range(length))

    def sub(
        self, pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str
    ) -> tuple[str, int]:
        parts: list[str] = []
        origin: list[int] = []
        last = count = 0
        for match in pattern.finditer(text):
            start, end = match.span()
            parts.append(text[last:start])
            origin.extend(self.origin[last:start])
            new = repl(match)
            parts.append(new)
            origin.extend(self.origin[start:end] if new == match.group(0) else [-1] * len(new))
            last, count = end, count + 1
        parts.append(text[last:])
        origin.extend(self.origin[last:])
        self.origin = origin
        return "".join(parts), count

    def restore(self, original: str, where: list[int], masked: str) -> str:
        """`masked` with the invisible characters of `original` back between the
        characters that were copied through unchanged (`where`: scanned -> original)."""
        out: list[str] = []
        previous = -2
        for char, source in zip(masked, self.origin, strict=True):
            if source < 0:
                out.append(char)
            elif source == 0:
                out.append(original[: where[0] + 1])
            elif source == previous + 1:
                out.append(original[where[previous] + 1 : where[source] + 1])
            else:
                out.append(original[where[source]])
            previous = source
        if where and previous == len(where) - 1:
            out.append(original[where[-1] + 1 :])
        return "".join(out)


def _literal_marker(match: re.Match[str]) -> str:
    return match.group(0) if match.group("marker") else REDACTED


def _shape_marker(match: re.Match[str]) -> str:
    # `lastgroup` is the outermost group that matched: the kind (its inner `keep` closes first).
    kind = (match.lastgroup or "secret").replace("_", "-")
    keep = match.group("keep") or match.group("keep_basic") or ""
    return f"{keep}[REDACTED:{kind}]"
