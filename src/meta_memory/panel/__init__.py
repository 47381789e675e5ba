"""The console Memory panel's pure read logic (seed: Console Memory panel).

* :mod:`.cursor` — the keyset cursor ``<updated_at_ms>:<memory_id>``;
* :mod:`.visibility` — which rows a caller may see, one decision per row kind;
* :mod:`.paging` — one listing across realms cut from readable rows.
"""
