"""Compare plots stay readable at every registered packer: small multiples and ranked bars, no legend
on the data."""

from __future__ import annotations

import numpy as np
import pytest

from packing_theory.orchestration import compare_packers, default_packers
from packing_theory.rendering.compare import PLOT_FILES, _never_started, _retention, plot_notes
from packing_theory.reporting import matplotlib_available, pyplot
from packing_theory.reporting.plotting import PALETTE

needs_plots = pytest.mark.skipif(not matplotlib_available(),
                                 reason="matplotlib (the plots extra) not installed")


@pytest.fixture(scope="module")
def comparison():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    lengths = np.concatenate([rng.integers(10, 400, 600), rng.integers(600, 2000, 30)])
    return compare_packers(lengths, default_packers(), capacity=513, min_buffer=32, refill=8)


def test_every_plot_has_data_on_a_corpus_with_long_documents(comparison) -> None:  # type: ignore[no-untyped-def]
    assert plot_notes(comparison) == {}


@needs_plots
def test_retention_is_one_panel_per_packer(comparison) -> None:  # type: ignore[no-untyped-def]
    plt = pyplot()
    fig = _retention(plt, comparison)
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(comparison.columns) >= 19
    assert sorted(ax.get_title() for ax in titled) == sorted(c.policy for c in comparison.columns)
    assert all(ax.get_legend() is None for ax in fig.axes)  # nothing drawn over the bars
    assert "one panel per packer" in fig._suptitle.get_text()
    colours = {tuple(round(v, 3) for v in p.get_facecolor()[:3]) for ax in titled for p in ax.patches}
    from matplotlib.colors import to_rgb

    assert colours <= {tuple(round(v, 3) for v in to_rgb(c)) for c in PALETTE}
    plt.close(fig)


@needs_plots
def test_never_started_is_a_ranked_bar_chart(comparison) -> None:  # type: ignore[no-untyped-def]
    plt = pyplot()
    fig = _never_started(plt, comparison)
    ax = fig.axes[0]
    widths = [p.get_width() for p in ax.patches]
    assert widths == sorted(widths) and len(widths) == len(comparison.columns)
    assert "Documents never started" in ax.get_title()
    plt.close(fig)
    assert PLOT_FILES[1] == "compare_never_started.png"
