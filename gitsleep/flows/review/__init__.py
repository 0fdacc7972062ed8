"""`gitsleep review`: `verdict` is the pure part (score both sides on one exam, judge the
change per split, say it as a comment, JSON or terminal lines); `edges` reads the base from
git at REF, finds the touched skills and the pull request, and keeps its one comment up to
date. `commands/review_cmd.py` is the click command."""
