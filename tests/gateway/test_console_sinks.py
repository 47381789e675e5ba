"""The console page never hands stored text to an HTML parser: a guard over its scripts.

Every value reaches the page through ``textContent`` and DOM nodes (``console.js``'s ``el``,
``charts.js``'s ``html``); the browser tests show titles such as ``<img onerror>`` and ``[/INST]``
rendered as text. This keeps it so: none of the sinks that parse markup may appear in the scripts.
"""

from __future__ import annotations

import re
from pathlib import Path

import meta_memory.console

STATIC = Path(meta_memory.console.__file__).parent / "static"
#: DOM and script APIs that parse a string as HTML or code.
SINKS = re.compile(r"\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|"
                   r"DOMParser|srcdoc|eval\s*\(|new Function|setTimeout\(\s*[\"'`])")


def test_no_script_of_the_console_parses_strings_as_markup() -> None:
    scripts = sorted(STATIC.glob("*.js"))
    assert scripts, "the console's scripts were not found"
    found = [f"{p.name}:{n}: {line.strip()}" for p in scripts
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if SINKS.search(line)]
    assert found == []
