"""
NMF features in a pipeline: digits, with the rank chosen by the evidence
========================================================================

scikit-learn's digits are 8 x 8 images of integer counts 0-16: Poisson data.
``BayesianNMF`` turns each image into ``k`` non-negative part weights (its
``transform`` folds new images in with the parts held fixed), and a logistic
regression classifies those weights. The rank ``k`` is chosen by the evidence
of the images alone, with ``GridSearchCV`` and
:class:`~sklearn_pltf.model_selection.FullDataSplit`; the labels are used only
to measure the accuracy of the pipeline.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_pltf import BayesianNMF
from sklearn_pltf.model_selection import FullDataSplit

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)

# %%
# Choose the rank by the evidence of the training images.
ranks, max_iter = [4, 8, 12, 16, 24, 32], 300
# sphinx_gallery_start_ignore
# The test suite sets SKLEARN_PLTF_QUICK_EXAMPLES to run each example at small settings.
import os  # noqa: E402

if os.environ.get("SKLEARN_PLTF_QUICK_EXAMPLES"):
    ranks, max_iter = [4, 8], 30
# sphinx_gallery_end_ignore
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a few ranks stop at max_iter; their bound still counts
    search = GridSearchCV(
        BayesianNMF(max_iter=max_iter, tol=1e-5, random_state=0),
        {"n_components": ranks},
        cv=FullDataSplit(),
    ).fit(X_train)
evidence = search.cv_results_["mean_test_score"]
k = search.best_params_["n_components"]
print(f"rank chosen by the evidence: {k}")

# %%
# The pipeline: part weights, standardised, into a logistic regression.
pipeline = make_pipeline(
    BayesianNMF(n_components=k, max_iter=max_iter, tol=1e-5, random_state=0),
    StandardScaler(),
    LogisticRegression(max_iter=2000),
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pipeline.fit(X_train, y_train)
    accuracy = pipeline.score(X_test, y_test)
print(f"test accuracy with {k} NMF features: {accuracy:.3f}")

# %%
# The evidence per rank, and the parts (rows of ``components_``) of the chosen model.
fig, (ax_evidence, ax_parts) = plt.subplots(1, 2, figsize=(9, 3.5))
ax_evidence.plot(ranks, evidence, "o-")
ax_evidence.axvline(k, color="grey", linestyle="--")
ax_evidence.set_xlabel("rank")
ax_evidence.set_ylabel("log evidence (VB bound)")
parts = pipeline[0].components_
n_show = min(len(parts), 8)
ax_parts.imshow(np.hstack([p.reshape(8, 8) for p in parts[:n_show]]), cmap="gray_r")
ax_parts.set_title(f"{n_show} of the {k} parts")
ax_parts.axis("off")
fig.tight_layout()
plt.show()
