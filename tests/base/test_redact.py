from __future__ import annotations

import json
import re
import string
import time
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gitsleep.base.redact import (
    MARKER_PATTERN,
    REDACTED,
    Redactor,
    is_secret_name,
    secrets_from_env,
    trie_pattern,
)

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
# Secret values as they come from the environment: printable, no brackets (a value that
# overlaps the `[REDACTED]` marker itself cannot be told apart from it).
SECRET_CHARS = ALNUM + "!#$%&*+,-./:;<=>?@^_|~ '\"\\"


def tokens(alphabet: str, min_size: int, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=min_size, max_size=max_size or min_size + 30)


PEM_BODIES = st.lists(tokens(ALNUM + "+/", 16, 64), min_size=1, max_size=4).map("\n".join)
SHAPED = st.one_of(
    tokens(B64URL, 20).map(lambda s: "sk-" + s),
    tokens(B64URL, 20).map(lambda s: "sk-proj-" + s),
    st.tuples(st.sampled_from("pousr"), tokens(ALNUM, 36, 40)).map(lambda t: f"gh{t[0]}_{t[1]}"),
    tokens(ALNUM + "_", 22, 82).map(lambda s: "github_pat_" + s),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]),
              tokens(string.ascii_uppercase + string.digits, 16, 16)).map("".join),
    st.tuples(st.sampled_from("abprs"), tokens(ALNUM + "-", 10)).map(
        lambda t: f"xox{t[0]}-{t[1]}"),
    st.tuples(tokens(B64URL, 8), tokens(B64URL, 4), tokens(B64URL, 0)).map(
        lambda t: f"eyJ{t[0]}.{t[1]}.{t[2]}"),
)
# Planted shapes sit after a character that ends a word, as tokens do in real text.
def unmarked(text: str) -> str:
    """The output with each marker replaced by a character no secret holds."""
    return re.sub(MARKER_PATTERN, "\0", text)


SEPARATORS = st.sampled_from([" ", "\n", "\t", "=", ":", '"', "'", "(", "/", ",", "\\n"])


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key=sk-proj-" + "A1b2" * 12, "openai-key"),
        ("OPENAI sk-" + "x" * 48, "openai-key"),
        ("token ghp_" + "a1B2" * 9, "github-token"),
        ("gho_" + "Z" * 36, "github-token"),
        ("ghs_" + "q" * 36, "github-token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github-token"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "aws-key-id"),
        ("ASIAY34FZKBOKMUTVV7A", "aws-key-id"),
        ("slack xoxb-123456789012-abcdefABCDEF", "slack-token"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
         "jwt"),
        ("Authorization: Bearer abc.DEF-123_456", "bearer"),
        ("curl -H 'authorization: bearer " + "z" * 30 + "'", "bearer"),
    ],
)
def test_each_shape_is_masked_with_its_kind(text: str, kind: str) -> None:
    out = Redactor().redact(text)
    assert f"[REDACTED:{kind}]" in out
    assert Redactor().redact(out) == out


def test_bearer_keeps_the_scheme_word_and_masks_only_the_credential() -> None:
    out = Redactor().redact("Authorization: Bearer abcdef123456\nnext line")
    assert out == "Authorization: Bearer [REDACTED:bearer]\nnext line"


def test_a_pem_private_key_block_is_masked_whole_and_an_unclosed_one_to_the_end() -> None:
    block = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1\nq83vEXAMPLE\n"
             "-----END RSA PRIVATE KEY-----")
    out = Redactor().redact(f"before\n{block}\nafter")
    assert out == "before\n[REDACTED:private-key]\nafter"
    cut = Redactor().redact("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\n")
    assert cut == "x [REDACTED:private-key]"


@pytest.mark.parametrize(
    "text",
    [
        "task-abcdefghijklmnopqrstuvwxyz0123 and desk-abcdefghijklmnopqrstuvwxyz",
        "the bearer of bad news; bearer authentication is described below",
        "eyJ alone, AKIA short, ghp_short, xoxb-1",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
        "Keep answers under 400 characters.\n## Summary\n- Always include \"Confidence:\"",
    ],
)
def test_ordinary_text_that_only_resembles_a_secret_is_unchanged(text: str) -> None:
    assert Redactor().redact(text) == text


def test_secrets_from_env_picks_named_and_suffixed_variables_only() -> None:
    env = {
        "OPENAI_API_KEY": "sk-live-0123456789",
        "MY_LLM": "value-of-custom-key",  # named by api_key_env
        "GITHUB_TOKEN": "ghs_tokenvalue123",
        "GH_TOKEN": "gh-token-value-9",
        "DB_PASSWORD": "hunter2hunter2",
        "APP_SECRET": "  padded-secret-1  ",
        "SHORT_TOKEN": "abc",  # too short to mask safely
        "HOME": "/root/not/secret",
        "PATH": "/usr/bin:/bin",
        "EDITOR": "vim-is-a-long-name",
    }
    found = secrets_from_env(env, extra_names=["MY_LLM"])
    assert set(found) == {
        "sk-live-0123456789",
        "value-of-custom-key",
        "ghs_tokenvalue123",
        "gh-token-value-9",
        "hunter2hunter2",
        "  padded-secret-1  ",
        "padded-secret-1",
    }
    assert [len(v) for v in found] == sorted((len(v) for v in found), reverse=True)
    assert is_secret_name("azure_client_secret") and not is_secret_name("MAX_TOKENS")


def test_a_path_to_an_existing_file_is_not_treated_as_a_secret(tmp_path) -> None:
    key_file = tmp_path / "id_ed25519"
    key_file.write_text("x")
    env = {"SSH_KEY": str(key_file), "SIGNING_KEY": "/not/an/existing/file/but/secret"}
    assert secrets_from_env(env) == ["/not/an/existing/file/but/secret"]


def test_longest_literal_wins_so_no_tail_of_a_longer_secret_is_left() -> None:
    redactor = Redactor(["abcdefgh", "abcdefgh-and-more-1234"])
    assert redactor.redact("x abcdefgh-and-more-1234 y abcdefgh z") == (
        f"x {REDACTED} y {REDACTED} z"
    )


def test_json_escaped_and_url_encoded_spellings_of_a_literal_are_masked() -> None:
    secret = 'p@ss/"word"\\42 tail'
    redactor = Redactor([secret])
    for spelled in (secret, json.dumps(secret)[1:-1], quote(secret, safe=""),
                    quote_plus(secret, safe="")):
        assert redactor.redact(f"<{spelled}>") == f"<{REDACTED}>"


def test_redact_obj_walks_nested_data_and_dict_keys() -> None:
    redactor = Redactor(["topsecret-value"])
    data = {
        "topsecret-value": ["a topsecret-value b", ("topsecret-value", 3)],
        "n": 1.5,
        "none": None,
        "nested": {"k": "Bearer abcdefgh12345"},
    }
    assert redactor.redact_obj(data) == {
        REDACTED: [f"a {REDACTED} b", (REDACTED, 3)],
        "n": 1.5,
        "none": None,
        "nested": {"k": "Bearer [REDACTED:bearer]"},
    }


def test_short_values_are_not_literals_and_markers_are_left_alone() -> None:
    assert Redactor(["short"]).literal_count == 0
    redactor = Redactor(["REDACTED", "private-key"])
    once = redactor.redact("short REDACTED private-key")
    assert once == f"short {REDACTED} {REDACTED}"
    assert redactor.redact(once) == once
    assert redactor.redact("[REDACTED:private-key]") == "[REDACTED:private-key]"


def test_one_megabyte_with_hundreds_of_literals_is_quick() -> None:
    secrets = [f"secret-{i:04d}-{'q' * (i % 17)}" for i in range(500)]
    redactor = Redactor(secrets)
    text = ("ordinary log line with numbers 12345 and words\n" * 20000) + secrets[250]
    started = time.perf_counter()
    out = redactor.redact(text)
    assert time.perf_counter() - started < 2.0
    assert out.endswith(REDACTED) and secrets[250] not in out


@settings(max_examples=150, deadline=None)
@given(
    secret=tokens(SECRET_CHARS, 8, 40),
    before=st.text(max_size=60),
    after=st.text(max_size=60),
)
def test_an_env_secret_planted_anywhere_never_survives(secret: str, before: str,
                                                       after: str) -> None:
    assume(len(secret.strip()) >= 8)
    redactor = Redactor(secrets_from_env({"OPENAI_API_KEY": secret}))
    out = redactor.redact(before + secret + after)
    assert secret not in unmarked(out)
    assert redactor.redact(out) == out


@settings(max_examples=200, deadline=None)
@given(secret=SHAPED, sep=SEPARATORS, before=st.text(max_size=40), after=st.text(max_size=40))
def test_a_shaped_secret_planted_after_a_word_break_never_survives(
    secret: str, sep: str, before: str, after: str
) -> None:
    out = Redactor().redact(before + sep + secret + after)
    assert secret not in unmarked(out)
    assert Redactor().redact(out) == out


@settings(max_examples=60, deadline=None)
@given(body=PEM_BODIES, kind=st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "]),
       before=st.text(alphabet="acdfhk \n", max_size=30),
       after=st.text(alphabet="acdfhk \n", max_size=30), closed=st.booleans())
def test_a_planted_private_key_never_survives(body: str, kind: str, before: str, after: str,
                                              closed: bool) -> None:
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n"
    if closed:
        block += f"-----END {kind}PRIVATE KEY-----"
    out = Redactor().redact(before + block + after)
    # Closed: only the block goes. Unclosed: everything after BEGIN goes, to be safe.
    assert out == before + "[REDACTED:private-key]" + (after if closed else "")


@settings(max_examples=60, deadline=None)
@given(token=tokens(ALNUM + "._~+/=-", 20), scheme=st.sampled_from(["Bearer", "bearer",
                                                                    "BEARER"]))
def test_a_bearer_credential_never_survives(token: str, scheme: str) -> None:
    out = Redactor().redact(f"Authorization: {scheme} {token}\r\n")
    assert token not in out
    assert out.startswith(f"Authorization: {scheme} [REDACTED:bearer]")


@settings(max_examples=150, deadline=None)
@given(text=st.text(), secrets=st.lists(tokens(SECRET_CHARS, 8, 30), max_size=3),
       planted=st.lists(SHAPED, max_size=2))
def test_redaction_is_idempotent(text: str, secrets: list[str], planted: list[str]) -> None:
    redactor = Redactor(secrets)
    once = redactor.redact(" ".join([text, *secrets, *planted, text]))
    assert redactor.redact(once) == once


# Prose: words of at most 12 letters can form no token shape and hold no 16+ char secret.
PROSE = st.lists(
    st.tuples(st.text(alphabet=string.ascii_lowercase + "éüß日本", max_size=12),
              st.sampled_from([" ", ". ", ", ", "\n", "; ", "! ", " (", ") ", ": "])),
    max_size=40,
).map(lambda parts: "".join(w + s for w, s in parts))


@settings(max_examples=150, deadline=None)
@given(text=PROSE, secret=tokens(ALNUM, 16, 30))
def test_text_without_secrets_is_unchanged(text: str, secret: str) -> None:
    assume(secret not in text)
    assert Redactor([secret]).redact(text) == text


@settings(max_examples=150, deadline=None)
@given(words=st.lists(st.text(alphabet="ab.|(c", min_size=1, max_size=6), min_size=1, max_size=8),
       text=st.text(alphabet="ab.|(cx", max_size=40))
def test_the_trie_matches_like_a_longest_first_alternation(words: list[str], text: str) -> None:
    reference = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))
    trie = re.compile(trie_pattern(words))
    assert trie.sub("#", text) == reference.sub("#", text)
    assert all(trie.fullmatch(w) for w in words)


# -- a secret split by an invisible character ---------------------------------------------

# Zero-width and bidi marks, other format characters, controls, and characters that render
# as nothing: each one alone split a secret past the redactor before.
SPLITTERS = ["\u200e", "\u200f", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
             "\u202e", "\u2066", "\u2069", "\u061c", "\U000e0041", "\u034f", "\ufe0f",
             "\u3164", "\x7f", "\x01", "\x1b", "\x85", "\u2028", "\u180e", "\u2063"]
DEPLOY = "Sekr3t-Deploy-Value-0123456789"


def invisible_free(text: str) -> str:
    from gitsleep.base.hostile_text import without_invisible

    return without_invisible(text)[0]


@pytest.mark.parametrize("mark", SPLITTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_secret_split_by_an_invisible_character_is_still_masked(mark: str) -> None:
    redactor = Redactor([DEPLOY])
    for secret, marker in ((DEPLOY, REDACTED), ("ghp_" + "a1B2" * 9, "[REDACTED:github-token]"),
                           ("sk-proj-" + "Q7" * 12, "[REDACTED:openai-key]")):
        split = secret[:6] + mark + secret[6:11] + mark + mark + secret[11:]
        out = redactor.redact(f"use {split} now")
        assert out == f"use {marker} now", mark
        assert secret not in invisible_free(out)


def test_invisible_characters_around_a_secret_stay_and_text_without_one_is_unchanged() -> None:
    redactor = Redactor([DEPLOY])
    text = "\u200fa\u200eb " + DEPLOY[:9] + "\u200b" + DEPLOY[9:] + " c\u2066d\u2069 ⚠️\u200e"
    assert redactor.redact(text) == "\u200fa\u200eb [REDACTED] c\u2066d\u2069 ⚠️\u200e"
    clean = "right-to-left \u200f mark, ⚠️ emoji, zero\u200bwidth, no secret"
    assert redactor.redact(clean) == clean


@settings(max_examples=150, deadline=None)
@given(secret=st.one_of(tokens(ALNUM + "-_.", 8, 40), SHAPED), before=st.text(max_size=30),
       after=st.text(max_size=30), marks=st.lists(st.tuples(st.integers(0, 60),
                                                            st.sampled_from(SPLITTERS)),
                                                  max_size=4))
def test_a_secret_with_invisible_characters_anywhere_never_survives(
    secret: str, before: str, after: str, marks: list[tuple[int, str]]
) -> None:
    assume(len(secret) >= 8)
    split = secret
    for at, mark in marks:
        at %= len(split) + 1
        split = split[:at] + mark + split[at:]
    redactor = Redactor([secret])
    text = before + " " + split + " " + after
    out = redactor.redact(text)
    # the visible text of the output is the redaction of the visible text: nothing to join
    assert invisible_free(out) == redactor.redact(invisible_free(text))
    assert secret not in unmarked(invisible_free(out))
    assert redactor.redact(out) == out


def test_the_invisible_set_holds_every_format_character_of_this_python() -> None:
    import sys
    import unicodedata

    from gitsleep.base.hostile_text import INVISIBLE

    missing = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
               if unicodedata.category(chr(c)) == "Cf" and not INVISIBLE.match(chr(c))]
    assert missing == []
    assert not INVISIBLE.search("\t\n\r plain text, é, 日本, ⚠")


# -- mask before the cut; the spellings the redactor missed -------------

FRAGMENT = 8  # no run of this many characters of a secret may leave


def leaked(secret: str, text: str) -> str | None:
    """The first piece of `secret` (FRAGMENT characters or more) found in `text`."""
    return next((secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)
                 if secret[i:i + FRAGMENT] in text), None)


LITERALS = tokens(ALNUM + "-_.", 16, 48).filter(lambda s: any(c.isdigit() for c in s))
# Secret values with delimiters inside: a cut can fall after one of them.
SPACED_LITERALS = tokens(SECRET_CHARS, 16, 48).filter(lambda s: s == s.strip())
AROUND = st.text(alphabet=string.ascii_lowercase + " .,\n", max_size=120)


@settings(max_examples=300, deadline=None)
@given(secret=st.one_of(LITERALS.map(lambda s: (s, True)), SHAPED.map(lambda s: (s, False))),
       before=AROUND, after=AROUND, limit=st.integers(0, 260), keep_tail=st.booleans())
def test_a_clip_masks_first_so_no_piece_of_a_secret_is_left_at_the_cut(
    secret: tuple[str, bool], before: str, after: str, limit: int, keep_tail: bool
) -> None:
    """Before: every site cut first and redacted after, so the piece of a key on the kept
    side of the cut no longer matched anything and was printed, logged or sent."""
    value, from_env = secret
    redactor = Redactor([value] if from_env else [])
    assume(leaked(value, before + " " + after) is None)
    out = redactor.clip(f"{before} {value} {after}", limit, tail=keep_tail)
    assert len(out) <= limit
    assert leaked(value, unmarked(out)) is None, out


@settings(max_examples=300, deadline=None)
@given(secret=st.one_of(LITERALS.map(lambda s: (s, True)),
                        SPACED_LITERALS.map(lambda s: (s, True)),
                        SHAPED.map(lambda s: (s, False))),
       cut=st.integers(1, 400), other=AROUND, at_start=st.booleans())
def test_a_text_already_cut_upstream_shows_no_piece_of_the_secret_at_that_edge(
    secret: tuple[str, bool], cut: int, other: str, at_start: bool
) -> None:
    """An agent's stderr is captured as its last 4096 bytes and a transcript message as
    its first 4000 characters: the cut is made before gitsleep sees the text, so the
    piece of a key at that edge can only be recognised as a piece."""
    value, from_env = secret
    cut = 1 + cut % (len(value) - 1)
    redactor = Redactor([value] if from_env else [])
    if at_start:
        out = redactor.clip(f"{value[cut:]} {other}", 1000, cut_start=True)
        piece = value[cut:]
    else:
        out = redactor.clip(f"{other} {value[:cut]}", 1000, cut_end=True)
        piece = value[:cut]
    assume(leaked(piece, other) is None)  # what is left must be free of it
    assert leaked(piece, unmarked(out)) is None, out


def test_a_clip_that_cuts_nothing_only_masks_and_prose_keeps_its_whole_words() -> None:
    redactor = Redactor(["Sekr3t-Deploy-Value-0123456789"])
    assert redactor.clip("short text", 100) == "short text"
    assert redactor.clip("use Sekr3t-Deploy-Value-0123456789 now", 100) == f"use {REDACTED} now"
    assert redactor.clip("the agent failed to configure the proxy", 28) == "the agent failed to …"
    assert redactor.clip("the agent failed to configure the proxy", 30) == (
        "the agent failed to configure…")  # the cut fell between two words: nothing to drop
    assert redactor.clip("the agent failed to configure the proxy", 18, tail=True) == (
        "… the proxy")
    # a cut inside a marker takes the marker whole or leaves it out, never half of it
    masked = redactor.clip("key Sekr3t-Deploy-Value-0123456789 here", 9)
    assert masked == "key …"
    assert redactor.clip("a Sekr3t-Deploy-Value-0123456789 tail", 12, tail=True) == "… tail"


def test_the_module_clip_without_secrets_still_drops_the_piece_at_the_cut() -> None:
    from gitsleep.base.redact import clip

    assert clip("prompt with key sk-proj-Abc123Def456Ghi789", 30) == "prompt with key …"
    assert clip("no cut at all", 30) == "no cut at all"


@pytest.mark.parametrize("spell", [
    lambda s: quote(s),  # Python's default: "/" stays
    lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(s, safe="")),
    lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote_plus(s)),
    lambda s: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(s)),
    lambda s: quote(s, safe="-_.!~*'()"),  # JavaScript's encodeURIComponent
], ids=["quote-default", "lower-hex", "lower-hex-plus",
        "lower-hex-default", "encodeURIComponent"])
def test_url_encoded_literals_in_lower_case_hex_and_quote_default_are_masked(spell) -> None:
    """Before: only `quote(s, safe="")` with upper-case hex was masked; lower-case hex
    (what many HTTP clients and logs print) and `quote(s)` leaked the key whole."""
    secret = "Ab/cd+ef=gh&ij kl?99"
    spelled = spell(secret)
    assert spelled != secret
    out = Redactor([secret]).redact(f"GET /cb?key={spelled}&x=1")
    assert out == f"GET /cb?key={REDACTED}&x=1", (spelled, out)


@pytest.mark.parametrize("text", [
    "Authorization: Basic dXNlcjpwYXNz",
    "authorization: basic dXNlcjpwYXNzd29yZA==",
    'curl -H "Authorization: Basic YWRtaW46aHVudGVyMg==" https://x',
    '{"Authorization": "Basic dXNlcjpwYXNz"}',
    "{'authorization': 'Basic dXNlcjpwYXNz'}",
    "Proxy-Authorization: Basic dXNlcjpwYXNz\r\n",
    "HTTP_AUTHORIZATION=Basic dXNlcjpwYXNz",
    "headers: Basic Zm9vOmJhcjEyMw==",  # no header name, but a base64 credential
])
def test_a_basic_auth_credential_is_masked_and_the_scheme_word_stays(text: str) -> None:
    """Before: only Bearer credentials were a shape; `Basic <base64 of user:password>`
    went out as it was, and base64 decodes back to the password."""
    out = Redactor().redact(text)
    credential = re.search(r"(?i)basic ([A-Za-z0-9+/=]+)", text).group(1)  # type: ignore[union-attr]
    assert credential not in out
    assert re.search(r"(?i)basic \[REDACTED:basic-auth\]", out), out
    assert Redactor().redact(out) == out


@pytest.mark.parametrize("text", [
    "Basic authentication is described in RFC 7617.",
    "basic usage: run the command",
    "a basic understanding of the system",
])
def test_prose_about_basic_authentication_is_unchanged(text: str) -> None:
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(("path", "rest"), [
    ("/home/alice", "/notes.md"),
    ("/Users/alice", "/notes.md"),
    ("C:\\Users\\alice", "\\notes.md"),
    ("/root", "/notes.md"),
    ("/mnt/c/Users/alice", "/notes.md"),  # Windows home seen from WSL
    ("c:\\users\\alice", "\\notes.md"),  # Windows paths are case-insensitive
    ("C:/Users/alice", "/notes.md"),
    ("\\\\wsl.localhost\\Ubuntu\\home\\alice", "\\notes.md"),  # a WSL home from Windows
    ("\\\\wsl$\\Ubuntu-22.04\\home\\alice", "\\notes.md"),
    ("/var/home/alice", "/notes.md"),  # Fedora Silverblue and other ostree systems
    ("/System/Volumes/Data/Users/alice", "/notes.md"),
])
def test_each_home_path_shape_is_masked(path: str, rest: str) -> None:
    """Before: the last seven shapes kept the user name (`/mnt/c/Users/alice`)."""
    from gitsleep.flows.harvest.privacy import Masker

    masker = Masker(Redactor())
    for spelled in (path + rest, json.dumps(path + rest)[1:-1]):
        out = masker.mask(f"open {spelled} now")
        assert "alice" not in out, out
        assert out.startswith("open ~") and out.endswith("notes.md now"), out
        assert masker.counts["home paths"] >= 1


def test_ordinary_paths_that_only_resemble_a_home_are_unchanged() -> None:
    from gitsleep.flows.harvest.privacy import Masker

    masker = Masker(Redactor())
    for text in ("see src/home/page.tsx", "the /homepage route", "docs/Users/guide.md",
                 "/mnt/data/file"):
        assert masker.mask(text) == text


def test_a_rubric_reply_cut_to_its_reason_keeps_no_piece_of_a_key() -> None:
    """The grader's reply becomes the reason (its first 300 characters), redacted later
    with the rest of diagnostics.json: a key across character 300 left its first half."""
    from gitsleep.core.judges import parse_rubric_reply

    key = "Lk9-literal-Value-0123456789-zzQ"
    reply = "Score: 7/10 " + "because " * 34 + key + " and more"
    assert reply.index(key) < 300 < reply.index(key) + len(key)
    score = parse_rubric_reply(reply)
    assert score is not None and score.soft == 0.7
    reason = Redactor([key]).redact(score.reason)
    assert leaked(key, reason) is None, reason
    assert reason.endswith("because …")
