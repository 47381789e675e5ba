"""The console: the Memory panel web page served at ``GET /console/`` (seed: Console Memory panel).

Static HTML, CSS and one script (no build step) in ``static/``; the page calls
the same ``meta/memory/panel/*`` RPCs and access rules as any client and reads
the live timeline from ``GET /events``. Routes: :mod:`.routes`.
"""
