"""Shared fixtures: real gateways on free ports (see ``support.py`` for the helpers)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from support import GatewayProcess, cache_bytecode_outside_the_tree, start_gateway, write_config

# Property tests assert behaviour, not speed (speed is the benchmarks' job): no per-example deadline, so
# a loaded machine cannot fail them. A test that needs a deadline sets its own. Two profiles: "full" (the full
# run and CI: hypothesis's 100 examples, or the count a test sets for itself) and "fast", which the fast tier
# (-m "not slow") loads outside CI: 25 examples for a property test that sets no count of its own. Either can
# be chosen with --hypothesis-profile.
settings.register_profile("full", deadline=None)
settings.register_profile("fast", deadline=None, max_examples=25)
settings.load_profile("full")

#: The heavy modules the fast tier (``pytest -m "not slow"``) leaves out, by path under ``tests/``: the
#: fuzzing of a real gateway over every method (10,000-call batches, 16 MiB bodies; the Unicode round trip
#: stays), the browser suites over a seeded console (the scoped reader's stays), the crash, kill, restart and
#: soak runs, and the modules that take over 4 s (most start a gateway or a command per test). Every test
#: directory keeps a module in the fast tier (``architecture/test_fast_tier.py`` checks it). The full run
#: (``pytest``) still runs them all.
SLOW_MODULES = (
    "fuzz/test_fuzz_adversarial.py",
    "fuzz/test_fuzz_params.py",
    "browser/test_browser_attacks.py",
    "browser/test_console_first_visit.py",
    "browser/test_console_held_forget.py",
    "browser/test_console_page.py",
    "browser/test_console_search.py",
    "reliability/test_crash_harness.py",
    "reliability/test_soak.py",
    "reliability/test_readiness.py",
    "reliability/test_full_disk.py",
    "access/test_gateway_access.py",
    "access/test_access_properties.py",
    "agent_memory/test_query_plans.py",
    "caps/test_request_body_cap.py",
    "caps/test_caps_import_release.py",
    "cli/test_shell.py",
    "cli/test_shell_stored_text.py",
    "cli/test_dropped_call.py",
    "e2e/test_e2e_outside_tools.py",
    "e2e/test_e2e_injection.py",
    "e2e/test_e2e_stored_strings.py",
    "e2e/test_e2e_poisoning.py",
    "e2e/test_e2e_firewall.py",
    "e2e/test_e2e_firewall_spelling.py",
    "e2e/test_e2e_markdown_import_guard.py",
    "e2e/test_e2e_time_budget.py",
    "e2e_review/test_timeline.py",
    "e2e_review/test_review_staged.py",
    "e2e_review/test_gating_conflict.py",
    "erase/test_erase.py",
    "erase/test_erase_is_final.py",
    "gateway/test_ledger_gateway.py",
    "gateway/test_perimeter.py",
    "gateway/test_transport.py",
    "gateway/test_serve_options.py",
    "gateway/test_slow_clients.py",
    "gateway/test_taint_restart.py",
    "gateway/test_replay_cli.py",
    "gateway/test_remember_batch.py",
    "integrity/test_no_silent_changes.py",
    "mcp/test_mcp_server.py",
    "observability/test_metrics.py",
    "postgres/test_multi_gateway.py",
    "postgres/test_multi_gateway_review.py",
    "recall/test_locomo_tuning.py",
    "storage/test_online_backup.py",
    # measured over 4 s a module in the fast tier (one module of each directory stays in it)
    "access/test_policy.py",
    "access/test_review_authority.py",
    "agent_memory/test_concurrency.py",
    "e2e/test_e2e_agent_memory.py",
    "e2e_review/test_held_forget.py",
    "e2e_review/test_review_access.py",
    "e2e_review/test_review_over_rpc.py",
    "erase/test_erase_canary.py",
    "firewall/test_derived_writes.py",
    "firewall/test_firewall_spelling.py",
    "firewall/test_invisible_spellings.py",
    "gateway/test_name_rules.py",
    "gateway/test_realm_firewall.py",
    "gateway/test_record_history.py",
    "gateway/test_repeated_headers.py",
    "gateway/test_session_taint_isolation.py",
    "host/test_memory_host.py",
    "injection/test_marker_any_spelling.py",
    "integrity/test_openrpc.py",
    "integrity/test_write_properties.py",
    "ledger/test_ledger_persistence.py",
    "lg_store/test_langgraph_store.py",
    "limits/test_array_caps.py",
    "limits/test_default_realm.py",
    "limits/test_ledger_bytes.py",
    "limits/test_query_limits.py",
    "limits/test_realm_allow_list.py",
    "limits/test_realm_lifecycle.py",
    "limits/test_recall_cancel.py",
    "limits/test_recall_slots.py",
    "mcp/test_mcp_fail_closed.py",
    "mcp/test_mcp_realm.py",
    "mcp/test_mcp_token.py",
    "mcp/test_mcp_dropped_call.py",
    "observability/test_log_lines.py",
    "panel_rpc/test_panel_many_realms.py",
    "panel_rpc/test_panel_properties.py",
    "panel_rpc/test_panel_rules.py",
    "portability/test_export_url.py",
    "portability/test_import_scans_every_string.py",
    "portability/test_round_trip.py",
    "postgres/test_pg_query_plans.py",
    "recall/test_lexical_index.py",
    "recall/test_ranking_scope.py",
    "recall/test_recall_index_surfaces.py",
    "reliability/test_timezones.py",
    "sdk/test_sdk_agent.py",
    "sdk/test_sdk_history.py",
    "sdk/test_sdk_ledger.py",
    "sdk/test_sdk_spawn_refusal.py",
    "sdk/test_sdk_typing.py",
    "semantic/test_degraded_recall.py",
    "semantic/test_real_model.py",
    "tool/test_tool_mob_recall.py",
    # measured over 9 s a module in a fast-tier run on 2 shared cores (load average about 4)
    "agent_memory/test_filtered_list_budget.py",
    "limits/test_memory_id_cap.py",
    "portability/test_import_langgraph.py",
    "portability/test_untrusted_import.py",
)


#: The directories whose tests run on both stores through the ``backend`` fixture of ``contract/conftest.py``.
TWO_BACKEND_DIRS = ("contract/", "recall/")


@pytest.hookimpl(trylast=True)  # after the tmp_path plugin's, whose factory names the run's temporary tree
def pytest_configure(config: pytest.Config) -> None:
    """The fast tier (a mark expression that leaves ``slow`` out) loads the "fast" hypothesis profile,
    unless ``CI`` is set or a profile was chosen on the command line. The processes the suite starts cache
    their bytecode under the run's temporary tree when the environment forbids writing it beside the sources
    (:func:`support.cache_bytecode_outside_the_tree`; set in the first process: under xdist, before the workers
    start, which inherit it)."""
    cache_bytecode_outside_the_tree(os.environ, lambda: config._tmp_path_factory.getbasetemp() / "pycache")  # type: ignore[attr-defined]
    markexpr = str(config.getoption("markexpr", "") or "")
    chosen = config.getoption("hypothesis_profile", None)
    if re.search(r"\bnot\s+slow\b", markexpr) and not os.environ.get("CI") and chosen is None:
        settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test of a module in ``SLOW_MODULES``, and the PostgreSQL run of each
    two-backend store test (``tests/contract`` and the ranking tests of ``tests/recall``: their SQLite
    run stays in the fast tier, and ``tests/postgres`` covers that backend there). The full run is
    unchanged."""
    root = Path(__file__).resolve().parent
    for item in items:
        try:
            rel = item.path.resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        callspec = getattr(item, "callspec", None)
        if rel.startswith(SLOW_MODULES) or (
                rel.startswith(TWO_BACKEND_DIRS) and callspec is not None and callspec.params.get("backend") == "postgres"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def gateway_factory(tmp_path: Path) -> Iterator[Any]:
    """Start gateways on demand; those still running after the test are discarded (killed: nothing reads
    their state again; a test that needs a graceful stop calls ``stop``)."""
    started: list[GatewayProcess] = []

    def factory(state_dir: Path | None = None, *extra: str, **kw: Any) -> GatewayProcess:
        gw = start_gateway(state_dir or (tmp_path / "state"), *extra, **kw)
        started.append(gw)
        return gw

    yield factory
    for gw in started:
        gw.discard()


@pytest.fixture
def gateway(gateway_factory: Any) -> GatewayProcess:
    """One running gateway on a fresh state dir."""
    return gateway_factory()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_gateway(request: pytest.FixtureRequest, gateway_factory: Any, tmp_path: Path) -> Iterator[GatewayProcess]:
    """One running gateway per agent-memory backend: the default SQLite store, then PostgreSQL in a
    throwaway schema (skipped when the server is not reachable)."""
    if request.param == "sqlite":
        yield gateway_factory()
        return
    from contract.pgsupport import dsn_with_schema, require_postgres, throwaway_schema

    require_postgres()
    with throwaway_schema() as schema:
        body = f'[agent_memory]\nstore = "postgres"\ndsn = "{dsn_with_schema(schema)}"\n'
        gw = gateway_factory(config=write_config(tmp_path / "meta.toml", body))
        yield gw
        gw.stop()




def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per missing optional extra, instead of one per skipped test."""
    from extras import INSTALL_HINT

    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        for extra in INSTALL_HINT:
            if f"needs the {extra!r} extra" in reason:
                counts[extra] = counts.get(extra, 0) + 1
    for extra, n in sorted(counts.items()):
        terminalreporter.write_line(f"skipped {n} test(s) or module(s) that need the {extra!r} extra: {INSTALL_HINT[extra]}")
