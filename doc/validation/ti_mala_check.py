"""An independent check of STI and Chib at rate 1: thermodynamic
integration with Metropolis-adjusted Langevin moves (MALA), which have no
discretisation bias, for the 100 x 75 Poisson NMF of ``chib_sti_ranks.py
sti-rank``.

Self-contained numpy, sharing nothing with the package but the data: the
target is the power posterior in φ = log Z with Gamma(1, 1) priors,
log π_t(φ) = Σ (a φ − b e^φ) + t log p(X | e^φ); the preconditioner is the
inverse of the Gamma conditionals' shape (as ``inference.sgld`` uses),
re-estimated during each temperature's warm-up, where the step is also tuned
to 60% acceptance; the same ladder (40 temperatures, power 6) and corrected
trapezoid rule as ``evidence.sti_log_evidence``. One chain walks up the
ladder. Run from the repository's root (minutes per rank and seed)::

    python doc/validation/ti_mala_check.py 1,2,3,4,5 2     # ranks, seeds per rank

Prints rank, seed, the estimate of log p(X | rank), the acceptance rate at
t = 1, the final step and seconds, and writes them to
``doc/_static/validation/ti_mala_check.json``.
"""
from _setup import line, write_json  # first: one core and the Agg backend, before numpy

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import gammaln  # noqa: E402

from chib_sti_ranks import poisson_nmf_data  # noqa: E402

X = poisson_nmf_data(1.0, 3)  # the rate-1 data of ``chib_sti_ranks.py sti-rank``
A, B = 1.0, 1.0  # the Gamma(shape, rate) prior of every factor entry
LOG_FACTORIALS = gammaln(X + 1).sum()


def log_target(phi_w, phi_h, t):
    """log π_t(φ), log p(X | e^φ), the gradient in φ and the factors."""
    W, H = np.exp(phi_w), np.exp(phi_h)
    xhat = W @ H
    log_lik = float(np.sum(X * np.log(xhat)) - xhat.sum() - LOG_FACTORIALS)
    residual = X / xhat - 1.0
    grad_w = t * W * (residual @ H.T) + A - B * W
    grad_h = t * H * (W.T @ residual) + A - B * H
    log_prior = float(np.sum(A * phi_w - B * W) + np.sum(A * phi_h - B * H))
    return log_prior + t * log_lik, log_lik, (grad_w, grad_h), (W, H, xhat)


def curvature(W, H, xhat, t):
    """The Gamma conditionals' shape at the point (``PoissonTarget.curvature``)."""
    ratio = X / xhat
    c_w = np.maximum(A + t * W * (ratio @ H.T), W * (B + t * H.sum(1)[None, :]))
    c_h = np.maximum(A + t * H * (W.T @ ratio), H * (B + t * W.sum(0)[:, None]))
    return c_w, c_h


def mala_ti(rank, seed, n_temperatures=40, power=6.0, n_warmup=1500, n_keep=4000):
    rng = np.random.default_rng(seed)
    phi = [np.log(rng.gamma(A, 1 / B, (X.shape[0], rank))),
           np.log(rng.gamma(A, 1 / B, (rank, X.shape[1])))]
    ladder = (np.arange(n_temperatures) / (n_temperatures - 1)) ** power
    step = 0.5
    means, variances = [], []
    for t in ladder:
        log_p, log_lik, grad, point = log_target(*phi, t)
        pre = [1 / c for c in curvature(*point, t)]
        kept, accepted = [], 0
        for k in range(n_warmup + n_keep):
            if k < n_warmup and k % 100 == 99:  # average in the curvature here
                pre = [0.5 * p + 0.5 / c for p, c in zip(pre, curvature(*point, t))]
                log_p, log_lik, grad, point = log_target(*phi, t)
            mean = [x + 0.5 * step * p * g for x, p, g in zip(phi, pre, grad)]
            new = [m + np.sqrt(step * p) * rng.standard_normal(m.shape) for m, p in zip(mean, pre)]
            new_log_p, new_log_lik, new_grad, new_point = log_target(*new, t)
            back = [x - (n + 0.5 * step * p * g) for x, n, p, g in zip(phi, new, pre, new_grad)]
            forward = -sum(np.sum((n - m) ** 2 / p) for n, m, p in zip(new, mean, pre)) / (2 * step)
            backward = -sum(np.sum(b ** 2 / p) for b, p in zip(back, pre)) / (2 * step)
            accept = np.log(rng.random()) < new_log_p - log_p + backward - forward
            if accept:
                phi, log_p, log_lik, grad, point = new, new_log_p, new_log_lik, new_grad, new_point
            if k < n_warmup:
                step *= np.exp(0.02 * (float(accept) - 0.6))
            else:
                accepted += accept
                kept.append(log_lik)
        means.append(np.mean(kept))
        variances.append(np.var(kept))
    means, variances = np.array(means), np.array(variances)
    widths = np.diff(ladder)
    plain = float(np.sum(widths / 2 * (means[1:] + means[:-1])))
    correction = float(np.sum(widths**2 / 12 * np.diff(variances)))
    return plain - correction, accepted / n_keep, step


if __name__ == "__main__":
    n_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for rank in [int(r) for r in sys.argv[1].split(",")]:
        for seed in range(n_seeds):
            start = time.perf_counter()
            estimate, acceptance, step = mala_ti(rank, seed)
            line(rank=rank, seed=seed, estimate=round(estimate, 2),
                 acceptance=round(acceptance, 2), step=round(step, 3),
                 seconds=round(time.perf_counter() - start, 1))
    write_json("ti_mala_check")
