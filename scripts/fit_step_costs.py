"""Fit each serving engine's whole-step terms on the published step times and write them.

    PYTHONPATH=. python scripts/fit_step_costs.py          # print the fit and its LOO error
    PYTHONPATH=. python scripts/fit_step_costs.py --write  # also write data/step_cost_fit.csv

The terms, their bounds and the evidence: explorer/calibration/step_costs.py. The shared data is
read beside the checkout (../shared, or EXPLORER_SHARED_DIR).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.calibration.step_costs import TERMS, fit_step_costs, fit_table  # noqa: E402
from explorer.presets import DATA_DIR, STEP_COST_FIT_FILE  # noqa: E402

SHARED = Path(os.environ.get("EXPLORER_SHARED_DIR", ROOT.parent / "shared"))


def main() -> int:
    result = fit_step_costs(SHARED)
    for engine, fit in result.fits.items():
        terms = ", ".join(f"{t} {fit.values[t]:.4g}{'' if t in fit.fitted_terms else ' (carried)'}"
                          for t in TERMS)
        mape, _, n = result.loo(engine)
        print(f"{engine}: {terms}; {fit.n_rows} rows from {len(fit.sources)} sources; "
              f"leave-one-source-out MAPE {mape:.1%} over {n} rows")
        for h in result.held_out:
            if h.engine == engine:
                print(f"   held out {h.source}: MAPE {h.mape:.1%} bias {h.bias:+.1%} "
                      f"(in the fit: {abs(h.in_fit / h.published - 1).mean():.1%})")
    if "--write" in sys.argv:
        path = DATA_DIR / STEP_COST_FIT_FILE
        fit_table(result).to_csv(path, index=False, lineterminator="\n")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
