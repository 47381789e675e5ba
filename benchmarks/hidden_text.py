"""Hidden-text rule cost: the write check and the render of one 2,000-character text.

Times, in thread CPU time (steady under outside load), :func:`check_text_field` (the write rule:
NUL, size, tag characters and variation selectors) and :func:`neutralise` (what every renderer
applies) on four texts: ASCII prose, Latin prose with accents, prose dense with emoji (VS16 after
hearts and smileys, skin tones) and Japanese with an ideographic variation sequence every 17
characters. Run it once on each tree to compare (``PYTHONPATH=<tree>/src``). Prints microseconds a
call, one ``name=value`` per measurement (``--json``: an object).

Usage::

    python3 benchmarks/hidden_text.py [--calls 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from meta_memory.agent_memory.fields import check_text_field
from meta_memory.injection.defang import neutralise

TEXTS = {
    "ascii": ("Refunds are issued within thirty days of purchase. " * 40)[:2000],
    "latin": ("Le café est servi à neuf heures, déjà prêt. " * 50)[:2000],
    "emoji": ("Team mood \u2764\ufe0f today \U0001F44D\U0001F3FD and \u263a\ufe0f again. " * 60)[:2000],
    "cjk": ("\u8fbb\U000E0101\u5c71\u7530\u592a\u90ce\u306f\u6771\u4eac\u306b\u4f4f\u3093\u3067\u3044\u307e\u3059"
            "\u3002" * 120)[:2000],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out: dict[str, float] = {}
    for name, text in TEXTS.items():
        for label, call in (("write_check", lambda: check_text_field("body", text)), ("render", lambda: neutralise(text))):
            call()  # warm: a first selector builds the rule's pattern once
            start = time.thread_time()
            for _ in range(args.calls):
                call()
            out[f"{label}.{name}_us"] = round((time.thread_time() - start) / args.calls * 1e6, 2)
    print(json.dumps(out, indent=2) if args.json else " ".join(f"{k}={v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
