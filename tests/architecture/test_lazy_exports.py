"""The packages that load their public names on first use (``meta_memory.sdk``, ``meta_memory.portability``)
give every name their ``__all__`` lists, each the object of the module it is defined in, and no other."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("meta_memory.sdk", "meta_memory.portability")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_listed_name_resolves_and_dir_lists_it(name: str) -> None:
    package = importlib.import_module(name)
    for public in package.__all__:
        value = getattr(package, public)
        assert value is not None, public
        home = getattr(value, "__module__", None) or getattr(value, "__name__", "")
        assert home.startswith(name), (public, home)
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", PACKAGES)
def test_a_star_import_gives_every_listed_name(name: str) -> None:
    code = f"from {name} import *\nimport {name} as p\nmissing = [n for n in p.__all__ if n not in globals()]\n" \
           "assert not missing, missing"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
