"""tools/ui_check.py's latency report: per slider figure, the median and 95th percentile of its redraws,
the first (one-time work) left out."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("ui_check", ROOT / "tools" / "ui_check.py")
ui_check = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ui_check", ui_check)
_spec.loader.exec_module(ui_check)


def _redraw(fig, ms, kernel_ms=None, ok=True):
    return ui_check.Redraw(fig, 0, "slider", "drag", "a", "b", ms, ok, kernel_ms=kernel_ms)


def test_per_figure_leaves_out_the_first_redraw_and_reports_median_and_95th_percentile():
    result = ui_check.LiveResult("nb")
    result.redraws = ([_redraw(1, 900, 800)] + [_redraw(1, ms, ms / 2) for ms in (10, 20, 30, 40, 100)]
                      + [_redraw(2, 5), _redraw(2, 7), _redraw(2, 1000, ok=False)])
    assert result.per_figure() == {1: (5, 30, 100, 15.0), 2: (1, 7, 7, None)}


def test_percentile_is_a_measured_value_by_nearest_rank():
    assert ui_check.percentile(list(range(1, 101)), 95) == 95
    assert ui_check.percentile([3, 1, 2], 95) == 3 and ui_check.percentile([4], 50) == 4
