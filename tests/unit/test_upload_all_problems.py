"""Issue 24: an upload's problems are reported at once — AL > 1 + D beside the D errors, not
only after they are fixed."""

from __future__ import annotations

from explorer.measured import al_csv


def test_al_bound_is_reported_beside_d_errors() -> None:
    text = "D,AL\n0,1.5\n2,4.5\nx,2\n3,2.5\n"
    result = al_csv.parse_text("bad.csv", text)
    assert not result.ok and not result.curves
    by_row = {(p.row, p.field): p.message for p in result.errors}
    assert "must be >= 1" in by_row[(1, "D")]
    assert "not a number" in by_row[(3, "D")]
    assert "AL 4.5 at D=2 is outside [1, 3]" in by_row[(2, "AL")]
    fixed = al_csv.parse_text("fixed.csv", "D,AL\n1,1.5\n2,2.5\n3,2.8\n")
    assert fixed.ok and len(fixed.curves) == 1
