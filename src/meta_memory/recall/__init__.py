"""Recall: text normalisation, the full-text index, ranking and recall providers.

Modules: :mod:`.text` (the one normalisation), :mod:`.fts` (the full-text
contract the store calls), :mod:`.provider` (typed provider interface),
:mod:`.lexical` (the default provider), :mod:`.guard` (the runtime's scope
re-check), :mod:`.fullscan` (the predecessor's scorer), :mod:`.store_reader`
(the reader contract over a record store's scope).
"""
