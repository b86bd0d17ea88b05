"""Where things are, relative to the repository (never a build machine's absolute path)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "data" / "samples"
ARTIFACTS = ROOT / "tests" / "artifacts"
# The shared reference data sits beside the checkout (../shared), as for every session and CI.
SHARED = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference"
REPRO = SHARED / "repro"
