"""
Hierarchical NMF with a fixed dictionary (Model III)
====================================================

The third model of Şimşekli & Cemgil (MLSP 2012): a count spectrogram
``X(f, t)`` built from a *known* dictionary of spectral templates
``D(f, i)`` (say, recorded notes), which unknown sources ``k`` mix with
weights ``E(i, k)`` and play with activations ``G(k, t)``:

.. math::

    X(f, t) \\sim \\mathrm{Poisson}\\Big(\\sum_{i, k} D(f, i)\\, E(i, k)\\,
        G(k, t)\\Big),

the model string ``"fi,ik,kt->ft"`` with the first factor fixed. How many
sources are there? Chib's estimate of the evidence, from SADA runs, answers;
then the posterior mean of ``E`` says which templates each source uses.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_pltf import PLTF

rng = np.random.default_rng(1)
n_bins, n_templates, n_frames = 24, 6, 20
bins = np.arange(n_bins)[:, None]
centres = np.linspace(2, n_bins - 3, n_templates)
dictionary = np.exp(-0.5 * ((bins - centres) / 1.2) ** 2)  # D(f, i): bumps in frequency

mixing = np.zeros((n_templates, 2))  # E(i, k): source 0 uses templates 0-2, source 1 uses 3-5
mixing[:3, 0] = [1.0, 0.6, 0.3]
mixing[3:, 1] = [0.4, 1.0, 0.7]
activations = rng.gamma(0.6, 6.0, size=(2, n_frames))  # G(k, t): bursty
X = rng.poisson(dictionary @ mixing @ activations).astype(float)
print(f"{int(X.sum())} counts in a {n_bins} x {n_frames} spectrogram")

# %%
# Chib's log evidence for 1-3 sources. Each estimate runs one clamped chain
# per block: the first row of E, where the label permutations are averaged
# (the dictionary tells the rows apart), then each other element of E and
# each element of G, at the default lengths.
settings = dict(method="sada", evidence="chib", fixed_factors={0: dictionary}, random_state=0)
n_posterior_draws = 2000
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    settings.update(n_draws=50, n_warmup=20)
    n_posterior_draws = 100
# sphinx_gallery_end_ignore
evidence = {}
for n_sources in (1, 2, 3):
    est = PLTF("fi,ik,kt->ft", n_components={"k": n_sources}, **settings).fit(X)
    evidence[n_sources] = est.log_evidence_
    print(f"{n_sources} source(s): log evidence {est.log_evidence_:.1f}")
best = max(evidence, key=evidence.get)
print(f"the evidence chooses {best} source(s) (truth: 2)")

# %%
# The posterior mean of the mixing weights at the chosen number of sources,
# each source scaled to sum one (scale moves freely between E and G), next
# to the truth; sources are matched to the true ones by their largest weight.
fit = PLTF("fi,ik,kt->ft", n_components={"k": best},
           **{**settings, "n_draws": n_posterior_draws, "evidence": None}).fit(X)
E = fit.factors_[1] / fit.factors_[1].sum(axis=0)
truth = mixing / mixing.sum(axis=0)
if best == 2 and E[:3, 0].sum() < E[:3, 1].sum():
    E = E[:, ::-1]
for k in range(E.shape[1]):
    print(f"source {k}: template weights {np.round(E[:, k], 2)}")

fig, axes = plt.subplots(1, 2, figsize=(7, 3.5), sharey=True)
for ax, matrix, title in [(axes[0], truth, "true E(i, k)"), (axes[1], E, "posterior mean E(i, k)")]:
    ax.imshow(matrix, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_title(title)
    ax.set_xlabel("source k")
    ax.set_xticks(range(matrix.shape[1]))
axes[0].set_ylabel("template i")
fig.tight_layout()
plt.show()
