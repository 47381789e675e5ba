"""Application services: the operations the RPC methods (and so every surface) perform.

Each service composes domain modules (store, recall, firewall, injection,
review) for one concern; handlers in :mod:`meta_memory.rpc.methods` only
parse params, check access and call a service.
"""
