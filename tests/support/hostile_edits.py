"""Edit contents that must never reach a document: invisible characters and script links,
and near misses that are ordinary rules. Shared by the hygiene and document tests."""

from __future__ import annotations

# One rule each, with an invisible character (not a C0 control: those have their own
# handling) inside: zero-width, bidi, other format characters, and blank-rendering ones.
INVISIBLE_MARKS = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202b",
                   "\u202c", "\u202d", "\u202e", "\u2060", "\u2061", "\u2066", "\u2067",
                   "\u2068", "\u2069", "\ufeff", "\u00ad", "\u061c", "\u180e", "\U000e0041",
                   "\U000e007f", "\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0100",
                   "\x85", "\x9b"]
INVISIBLE_CONTENTS = [f"Always include{mark} \"Severity\"" for mark in INVISIBLE_MARKS] + [
    "Never skip \u202egnitset\u202c the tests",  # reads reversed
    "Always include \"Owner\"\u200b",  # trailing zero-width space
    "\u2066Use the heading \"## Impact\"\u2069",
]

LINK_CONTENTS = [
    "See [the docs](javascript:alert(1))",
    "See [the docs]( JaVaScRiPt:alert(1))",
    "See [the docs](<javascript: alert(1)>)",
    "Open <javascript:alert(1)> first",
    "Run javascript:alert(document.cookie) to check",
    "Click vbscript:msgbox(1)",
    "Show ![logo](data:image/svg+xml;base64,PHN2Zz4=)",
    "Use DATA:text/html,<b>x</b> as the template",
    'Link <a href="  javascript:go()">here</a>',
    "Link <a href=javascript:go()>here</a>",
    "See [the docs](java\tscript:alert(1))",
    "See [the docs](java&Tab;script:alert(1))",
    "See [the docs](javascript&#58;alert(1))",
    "See [the docs](&#106;avascript:alert(1))",
    "See [the docs](&#x6A;avascript:alert(1))",
    "See [the docs](javascript&colon;alert(1))",
    "See [the docs](&amp;#106;avascript:alert(1))",
    "See [the docs](javascript\\:alert(1))",
    "See [the docs][ref]\n[ref]: javascript:alert(1)",
    "See [the docs](ｊａｖａｓｃｒｉｐｔ:alert(1))",
    "See [the docs](  \n javascript:alert(1))",
    "Paste javascript://%0aalert(1) into the bar",
    "Load data:,hello as the body",
]

# Ordinary rules that only look close: kept by hygiene and applied by the document layer.
SAFE_CONTENTS = [
    "JavaScript: prefer const over let",
    "Data: cite the source of every number",
    "Keep the metadata:key form for tags",
    "Link to https://example.com/docs, never to a local file",
    "See [the guide](https://example.com/javascript:intro)",
    "⚠️ Never skip the summary",
    "Write names in their own script: 日本語, Ελληνικά, עברית",
    'Always include "Data:" and "JavaScript:" labels',
    "Label the table **Data:** and cite it",
]
