"""The status board: what operators watch to see whether reminders ring on time.

`board.Board` reads it from the store in capped index scans and keeps it a moment, so the
JSON endpoint (`GET /v1/status`, `tocsin.api.routes.status`) costs the database the same
however many pages poll it; `models` is that endpoint's documented shape; `assets/` is the
page at `/status` (hand-written HTML, CSS and JavaScript drawing SVG charts, no build step).
"""
