"""The optional semantic ("hybrid") recall extra.

Selected with ``[agent_memory] recall_provider = "hybrid"`` and installed with
``pip install 'meta-memory[semantic]'``. Importing this package (and
:mod:`.vectors`, :mod:`.embedder`, :mod:`.indexer`) needs nothing beyond the
base install; :mod:`.hybrid` needs ``numpy`` and :mod:`.model` the whole
extra (imported only when ``hybrid`` is selected).

Modules: :mod:`.vectors` (the vector table and blob format the store uses),
:mod:`.embedder` (the embedder interface and a dependency-free hashing
embedder), :mod:`.model` (the bundled all-MiniLM-L6-v2, offline, CPU),
:mod:`.indexer` (the background embedder), :mod:`.hybrid` (the fused
provider), :mod:`.setup` (building the provider for a runtime).
"""
