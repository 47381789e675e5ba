"""The packages that load their public names on first use (``meta_memory.sdk``, ``meta_memory.portability``,
``meta_memory.observability``, ``meta_memory.access``) give every name their ``__all__`` lists, each the object of the module it is
defined in, and no other."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("meta_memory.sdk", "meta_memory.portability", "meta_memory.observability", "meta_memory.access")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_listed_name_resolves_and_dir_lists_it(name: str) -> None:
    package = importlib.import_module(name)
    for public in package.__all__:
        value = getattr(package, public)
        assert value is not None, public
        home = getattr(value, "__module__", None) or getattr(value, "__name__", "")
        if not home:  # a constant (a frozenset of actions): the very object its home module defines
            module = importlib.import_module(f"{name}.{package._HOMES[public]}")
            assert getattr(module, public) is value, public
            home = module.__name__
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


@pytest.mark.parametrize(("setup", "absent", "then", "loaded"), [
    # every ``meta-memory`` command configures its log lines (``meta_memory.observability.logs``), and a ``--url``
    # command uses the method table's helpers (``meta_memory.rpc.registry``); neither imports Prometheus, which
    # only a serving runtime's metrics need
    ("from meta_memory.observability.logs import configure_logging\nconfigure_logging('text')\n"
     "import meta_memory.rpc.registry",
     ("prometheus_client", "meta_memory.observability.metrics"),
     "from meta_memory.observability import Observability", "meta_memory.observability.metrics"),
    # the method table a ``--url`` command reads (whose methods declare their access requirements) does not import
    # the ``[access]`` configuration models or the policy, which only a serving runtime judging calls needs
    ("import meta_memory.rpc.registry", ("meta_memory.access.config", "meta_memory.access.policy"),
     "from meta_memory.access import AccessPolicy", "meta_memory.access.config"),
], ids=["log_lines_without_prometheus", "method_table_without_access_configuration"])
def test_a_command_loads_only_what_it_uses(setup: str, absent: tuple[str, ...], then: str, loaded: str) -> None:
    """In a fresh interpreter, ``setup`` imports none of ``absent``; the public name ``then`` reads loads ``loaded``."""
    code = (f"import sys\n{setup}\nloaded = [m for m in {absent!r} if m in sys.modules]\nassert not loaded, loaded\n"
            f"{then}\nassert {loaded!r} in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_a_lazy_name_is_its_home_modules_and_an_unknown_one_names_the_package() -> None:
    """:func:`meta_memory.lazy_names.lazy_names`, the one rule every lazily loading package takes: a listed name
    is the object of the module it names, a listed submodule the module itself, anything else an AttributeError
    naming the package and the name."""
    from meta_memory.lazy_names import lazy_names

    get, _ = lazy_names("meta_memory.portability", {"export_jsonl": "exporter"}, modules=("format",))
    assert get("export_jsonl") is importlib.import_module("meta_memory.portability.exporter").export_jsonl
    assert get("format") is importlib.import_module("meta_memory.portability.format")
    with pytest.raises(AttributeError, match="module 'meta_memory.portability' has no attribute 'import_jsonl'"):
        get("import_jsonl")
