"""Work a gateway start does not need is done on first use: the RPC params and result models build their
validators when a method first parses or answers (pydantic's ``defer_build``, from pydantic 2.14:
``meta_memory/rpc/deferred.py``), and the word and emoji patterns
of the recall text rules scan Unicode when text is first read. Each is checked in a fresh interpreter, then
that the deferred piece still does its job there."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> None:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_rpc_models_build_their_validators_on_first_use() -> None:
    _run("""
import pydantic
from meta_memory.rpc import params, results, results_review
from meta_memory.rpc.methods import agent_memory_params
models = [m for mod in (results, results_review, agent_memory_params) for m in vars(mod).values()
          if isinstance(m, type) and issubclass(m, (params.Params, results.Result))]
assert len(models) > 40, len(models)
built = [m.__name__ for m in models if m.__pydantic_complete__]
from meta_memory.rpc.deferred import DEFER_BUILD  # a pydantic before 2.14 builds them where defined
assert (not built) if DEFER_BUILD else len(built) == len(models), built
ref = results.ScopeRef.model_validate({"scope": "identity", "realm": "default", "identity": "lead:main"})
assert ref.identity == "lead:main" and results.ScopeRef.__pydantic_complete__
try:
    results.ScopeRef.model_validate({"scope": "identity", "realm": "default", "extra": 1})
except pydantic.ValidationError as exc:
    assert "extra" in str(exc)
else:
    raise AssertionError("an unknown member was accepted")
""")


def test_the_recall_text_patterns_scan_unicode_on_first_use() -> None:
    _run("""
from meta_memory.recall import text
lazy = (text._mark_class, text._word_only, text._emoji)
assert all(f.cache_info().currsize == 0 for f in lazy), [f.cache_info() for f in lazy]
assert text.word_runs("cafe\\u0301 na\\u00efve") == ["cafe\\u0301", "na\\u00efve"]
assert text.is_word_run("cafe\\u0301") and not text.is_word_run("a b")
assert text.token_set("\\U0001F600 smile") >= {"\\U0001F600"}
""")
