"""Make the shared hypothesis strategies (``access_strategies``) and the pager tests' writes (``panel_support``)
importable."""

import sys
from pathlib import Path

_ACCESS = str(Path(__file__).resolve().parents[1] / "access")
_HERE = str(Path(__file__).resolve().parent)
for _path in (_ACCESS, _HERE):
    if _path not in sys.path:
        sys.path.insert(0, _path)
