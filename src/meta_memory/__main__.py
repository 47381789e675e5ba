"""``python -m meta_memory``: the ``meta-memory`` command line."""

from meta_memory.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
