"""How a labelled line is spelled in an answer or a rule: `Severity: 3`, `**Verdict:**
approve`, `- Risk level = high`. One spelling, shared by the modules that read such lines
(fragments, honesty, hygiene), so they agree on what a label is."""

from __future__ import annotations

EMPHASIS = r"(?:\*\*|__)?"  # an optional bold marker around a label or its value
BULLET = r"(?:[-*+]\s+)?"  # an optional list bullet before the label
NAME = r"[A-Za-z][\w ()/-]{0,30}"  # the label itself: a word, then up to 30 more characters
# the label (named `label`, shortest match), its bold markers and the `:` or `=` after it
LABEL = rf"{EMPHASIS}(?P<label>{NAME}?)\s*{EMPHASIS}\s*[:=]\s*{EMPHASIS}"
