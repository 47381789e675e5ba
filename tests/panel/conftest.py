"""Make the shared hypothesis strategies (``access_strategies``) importable."""

import sys
from pathlib import Path

_ACCESS = str(Path(__file__).resolve().parents[1] / "access")
if _ACCESS not in sys.path:
    sys.path.insert(0, _ACCESS)
