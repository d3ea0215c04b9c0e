"""The plotting helpers draw what they are given and refuse what they cannot draw."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from sklearn_pltf import BayesianNMF, PoissonCP  # noqa: E402
from sklearn_pltf.plotting import plot_evidence, plot_factors, plot_trace  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_evidence_marks_the_best_rank():
    ax = plot_evidence([1, 2, 3], [-10.0, -4.0, -6.0], errors=[0.5, 0.5, 1.0], label="VB")
    line, circle = ax.lines[0], ax.lines[-1]
    np.testing.assert_array_equal(line.get_ydata(), [-10.0, -4.0, -6.0])
    assert circle.get_xdata()[0] == 2 and circle.get_ydata()[0] == -4.0
    assert ax.get_legend().get_texts()[0].get_text() == "VB"
    with pytest.raises(ValueError, match="shape"):
        plot_evidence([1, 2], [0.0])


def test_plot_trace_draws_every_chain():
    X = np.random.default_rng(0).poisson(2.0, size=(10, 6))
    est = BayesianNMF(2, method="gibbs", evidence=None, n_init=2, n_warmup=20, n_draws=30,
                      random_state=0).fit(X)
    ax = plot_trace(est)
    assert len(ax.lines) == 3  # two chains and the end of the warm-up
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), est.log_likelihoods_[1])
    ax2 = plot_trace(est, skip_warmup=True)
    assert len(ax2.lines[0].get_ydata()) == 30
    with pytest.raises(ValueError, match="sampler trace"):
        plot_trace(BayesianNMF(2, random_state=0).fit(X))


def test_plot_factors_normalizes_each_column():
    X = np.random.default_rng(0).poisson(2.0, size=(8, 6, 5))
    est = PoissonCP(2, random_state=0).fit(X)
    axes = plot_factors(est, names=["a", "b", "c"], kind="line")
    assert [ax.get_title() for ax in axes] == ["a", "b", "c"]
    for ax, factor in zip(axes, est.factors_):
        np.testing.assert_allclose(ax.lines[1].get_ydata(), factor[:, 1] / factor[:, 1].sum())
        assert ax.get_ylabel() == "share"
    with pytest.raises(ValueError, match="No factor matrix"):
        plot_factors([np.ones(3)])
    with pytest.raises(ValueError, match="kind must be"):
        plot_factors(est, kind="pie")


def test_plot_factors_orients_by_the_model_and_names_the_axes():
    """BayesianNMF's H is stored components by features; it is drawn with
    the features along the axis, labelled by the DataFrame's column names."""
    X = np.random.default_rng(0).poisson(2.0, size=(40, 6)).astype(float)
    frame = pd.DataFrame(X, columns=[f"word{j}" for j in range(6)])
    est = BayesianNMF(2, random_state=0).fit(frame)
    axes = plot_factors(est)
    assert [ax.get_title() for ax in axes] == ["W (i)", "H (j)"]
    assert axes[0].lines and not axes[0].images  # 40 samples: lines
    H = est.components_
    np.testing.assert_allclose(axes[1].images[0].get_array(), (H / H.sum(axis=1, keepdims=True)).T)
    assert [t.get_text() for t in axes[1].get_yticklabels()] == list(frame.columns)
    assert axes[1].get_ylabel() == "j (axis 1)"


def test_plot_factors_labels_categories_and_draws_bars():
    X = np.random.default_rng(0).poisson(2.0, size=(4, 3, 5)).astype(float)
    est = PoissonCP(2, random_state=0).fit(X)
    countries = ["a", "b", "c", "d"]
    axes = plot_factors(est, labels={0: countries}, kind="bar")
    assert len(axes[0].patches) == 4 * 2  # a bar per country and component
    assert [t.get_text() for t in axes[0].get_xticklabels()] == countries
    with pytest.raises(ValueError, match="labels for matrix 0 has 3 entries"):
        plot_factors(est, labels={0: countries[:3]})
