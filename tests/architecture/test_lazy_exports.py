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


def test_a_command_sets_up_its_log_lines_without_prometheus() -> None:
    """Every ``meta-memory`` command configures its log lines (``meta_memory.observability.logs``), and a
    ``--url`` command uses the method table's helpers (``meta_memory.rpc.registry``); neither imports Prometheus,
    which only a serving runtime's metrics need."""
    code = ("import sys\nfrom meta_memory.observability.logs import configure_logging\nconfigure_logging('text')\n"
            "import meta_memory.rpc.registry\n"
            "loaded = [m for m in ('prometheus_client', 'meta_memory.observability.metrics') if m in sys.modules]\n"
            "assert not loaded, loaded\n"
            "from meta_memory.observability import Observability\n"
            "assert 'meta_memory.observability.metrics' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_the_method_table_loads_without_the_access_configuration() -> None:
    """A ``--url`` command reads the method table (``meta_memory.rpc.registry``, whose methods declare their
    access requirements); it does not import the ``[access]`` configuration models or the policy, which only a
    serving runtime judging calls needs."""
    code = ("import sys\nimport meta_memory.rpc.registry\n"
            "loaded = [m for m in ('meta_memory.access.config', 'meta_memory.access.policy') if m in sys.modules]\n"
            "assert not loaded, loaded\n"
            "from meta_memory.access import AccessPolicy\n"
            "assert 'meta_memory.access.config' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
