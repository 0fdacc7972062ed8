from __future__ import annotations

import json
import re
import string
import time
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gitsleep.redact import (
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
    from gitsleep.hostile_text import without_invisible

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

    from gitsleep.hostile_text import INVISIBLE

    missing = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
               if unicodedata.category(chr(c)) == "Cf" and not INVISIBLE.match(chr(c))]
    assert missing == []
    assert not INVISIBLE.search("\t\n\r plain text, é, 日本, ⚠")
