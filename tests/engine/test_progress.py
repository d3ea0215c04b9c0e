"""Long loops report what runs and the time left with ``verbose``."""

import io
import re

import numpy as np
import pytest

from sklearn_pltf import BayesianNMF, GibbsNTF
from sklearn_pltf.engine._progress import Progress, progress_or_none


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_prints_the_time_left_at_the_pace_so_far():
    clock, out = Clock(), io.StringIO()
    progress = Progress("Chib's clamped runs", 10, unit="blocks", interval=5.0, stream=out,
                        clock=clock)
    clock.now = 2.0
    progress()  # 2 s after the start, within the interval: silent
    assert out.getvalue() == ""
    clock.now = 6.0
    progress()  # 2 of 10 in 6 s: 3 s each, 8 to go
    assert out.getvalue() == "Chib's clamped runs: 2/10 blocks, 6 s so far, about 24 s left\n"
    for _ in range(8):
        clock.now += 0.5
        progress()
    assert out.getvalue().splitlines()[-1] == "Chib's clamped runs: 10/10 blocks, 10 s so far"


def test_silent_unless_verbose():
    assert progress_or_none(0, "x", 5) is None
    assert isinstance(progress_or_none(1, "x", 5), Progress)


def _last_lines(text):
    return {line.split(":")[0]: line for line in text.splitlines() if ":" in line}


@pytest.mark.parametrize("method, evidence, labels", [
    ("gibbs", "auto", ["gibbs chain 1/2", "gibbs chain 2/2", "AIS"]),
    ("gibbs", "chib", ["gibbs chain 1/2", "Chib's clamped runs"]),
    ("sgld", "auto", ["STI", "sgld chain 1/2", "sgld chain 2/2"]),
])
def test_poisson_samplers_report_each_long_loop(method, evidence, labels, capsys):
    X = np.random.default_rng(0).poisson(2.0, size=(8, 6)).astype(float)
    settings = dict(n_temperatures=4, steps_per_temperature=20) if method == "sgld" else {}
    BayesianNMF(2, method=method, evidence=evidence, n_init=2, n_warmup=10, n_draws=20,
                verbose=1, random_state=0, **settings).fit(X)
    lines = _last_lines(capsys.readouterr().out)
    for label in labels:
        assert label in lines, lines
        done, total = map(int, re.search(r": (\d+)/(\d+) ", lines[label]).groups())
        assert done == total > 0  # the last line of each loop is its end


@pytest.mark.slow(minutes=0.25)
def test_gibbs_ntf_reports_its_chain_and_ais(capsys):
    X = np.random.default_rng(0).gamma(2.0, 1.0, size=(5, 4, 3))
    GibbsNTF(2, n_warmup=5, n_draws=10, verbose=1, random_state=0).fit(X)
    lines = _last_lines(capsys.readouterr().out)
    assert lines["gibbs chain 1/1"].startswith("gibbs chain 1/1: 15/15 iterations")
    assert lines["AIS"].startswith("AIS: 999/999 temperatures")


def test_allocation_smc_reports_tokens_and_vb_iterations(capsys):
    from sklearn_pltf import AllocationSMC

    X = np.random.default_rng(0).poisson(1.0, size=(4, 3, 3))
    AllocationSMC(2, n_particles=50, n_islands=2, verbose=1, random_state=0).fit(X)
    line = _last_lines(capsys.readouterr().out)["SMC"]
    assert line.startswith(f"SMC: {int(X.sum())}/{int(X.sum())} tokens")
    AllocationSMC(2, method="vb", max_iter=5, tol=0.0, verbose=1, random_state=0).fit(X)
    line = _last_lines(capsys.readouterr().out)["Allocation VB"]
    assert line.startswith("Allocation VB: 5/5 iterations")


def test_gibbs_ntf_reports_its_chain_and_chib(capsys):
    X = np.random.default_rng(0).gamma(2.0, 1.0, size=(5, 4, 3))
    GibbsNTF(2, evidence="chib", n_warmup=5, n_draws=10, verbose=1, random_state=0).fit(X)
    lines = _last_lines(capsys.readouterr().out)
    assert lines["gibbs chain 1/1"].startswith("gibbs chain 1/1: 15/15 iterations")
    # σ²'s run, then one per element: (5 + 4 + 3) x 2
    assert lines["Chib's clamped runs"].startswith("Chib's clamped runs: 25/25 blocks")
