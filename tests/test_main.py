"""``python -m sklearn_pltf``: the README's demo runs and reports what it
promises, and the command works on a user's own file."""

import re
import numpy as np
import pytest
from joblib import parallel_config

from sklearn_pltf.__main__ import PRIOR_SHAPES, main

ROW = r"^\s*(CP|Tucker|RESCAL-probit|RESCAL|NMF)\s+(\d+)\s+(\d\.\d)\s+(-\d+\.\d)\s+\d+\.\d+\s+\((?:~\d+ s left|done)\)$"


def _evidence(out):
    return {(s, int(r), float(a)): float(e) for s, r, a, e in re.findall(ROW, out, re.M)}


def _chosen(out):
    structure, rank, shape = re.search(
        r"Chosen by the evidence: (CP|Tucker|RESCAL-probit|RESCAL|NMF), rank (\d+), prior shape (\d\.\d)",
        out).groups()
    return structure, int(rank), float(shape)


def test_demo_chooses_a_model_and_predicts_links(capsys):
    candidates = [("CP", 2), ("CP", 5), ("Tucker", 2), ("RESCAL", 2)]
    assert main(["--folds", "3"], candidates=candidates) == 0
    out = capsys.readouterr().out
    evidence = _evidence(out)
    assert len(evidence) == len(candidates) * len(PRIOR_SHAPES)  # a progress line per fit
    assert evidence[_chosen(out)] == max(evidence.values())
    roc, pr = map(float, re.search(r"AUC-ROC (\d\.\d+) .*AUC-PR (\d\.\d+)", out).groups())
    # Off its diagonal Nations is 19.9% links: a random ranking has AUC-ROC 0.5 and AUC-PR 0.199;
    # the full demo (10 folds, every candidate) reaches about 0.91 and 0.80
    assert roc > 0.85 and pr > 0.6
    assert len(re.findall(r"^\s+[123]\s+333[67]\s+0\.\d{3}\s+0\.\d{3}", out, re.M)) == 3


def test_on_binary_relations_the_probit_family_competes_by_its_bound(capsys):
    """On Nations (0/1) the probit RESCAL's VB bound, a probability of the
    same entries, is printed and compared with the Bernoulli–Poisson
    RESCAL's; the highest evidence of either family is chosen."""
    argv = ["--models", "RESCAL,RESCAL-probit", "--ranks", "2-3", "--folds", "0",
            "--restarts", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    evidence = _evidence(out)
    assert {s for s, _, _ in evidence} == {"RESCAL", "RESCAL-probit"}
    assert len(evidence) == 2 * 2 * len(PRIOR_SHAPES)
    assert evidence[_chosen(out)] == max(evidence.values())
    assert "or the probit link" in out
    # A probability of binary entries: every bound below 0.
    assert max(evidence.values()) < 0


@pytest.mark.slow(minutes=0.3)
def test_ranks_auto_fits_each_structure_once_with_ard(user_counts, tmp_path, capsys):
    figure = tmp_path / "relevances.png"
    argv = ["--data", str(user_counts), "--ranks", "auto", "--models", "NMF,CP", "--folds", "2",
            "--restarts", "1", "--plot", str(figure)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(CP|NMF)\s+(\d+)\s+(\d\.\d)\s+(-\d+\.\d)\s+\d+\.\d+\s+(\d+)\s+",
                      out, re.M)
    # one fit per structure and prior shape, at the top of the structure's range
    assert sorted((s, int(r)) for s, r, _, _, _ in rows) == sorted(
        [("CP", 10), ("NMF", 10)] * len(PRIOR_SHAPES))
    # the chosen fit has the highest evidence printed (on a matrix CP is NMF: their
    # evidences can tie to the printed 0.1 nat, and either is then the highest)
    top = max(float(row[3]) for row in rows)
    chosen = re.search(r"Chosen by the evidence: (CP|NMF) with ARD from rank 10 \(kept (\d+)\)",
                       out)
    assert chosen.groups() in {(s, kept) for s, _, _, e, kept in rows if float(e) == top}
    assert int(chosen.group(2)) == 2  # the rank the data were drawn with
    assert len(_fold_scores(out)) == 2
    assert figure.stat().st_size > 0


def test_help_prints_usage_and_runs_nothing(capsys):
    with pytest.raises(SystemExit) as raised:
        main(["--help"])
    assert raised.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m sklearn_pltf")
    for option in ("--data", "--models", "--ranks", "--folds", "--n-jobs", "--seed", "--plot"):
        assert option in out
    assert "Step 1" not in out


@pytest.fixture
def user_counts(tmp_path):
    """A user's rank-2 count matrix with one missing entry, saved as .npz."""
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.gamma(1.0, 1.0, (30, 2)) @ rng.gamma(1.0, 1.0, (2, 20))).astype(float)
    X[0, 0] = np.nan
    path = tmp_path / "counts.npz"
    np.savez(path, X=X)
    return path


def test_the_command_runs_on_a_users_npz_file(user_counts, tmp_path, capsys):
    figure = tmp_path / "evidence.png"
    argv = ["--data", str(user_counts), "--ranks", "1-4", "--folds", "3", "--plot", str(figure)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "shape 30 x 20" in out and "1 missing" in out
    evidence = _evidence(out)
    assert {s for s, _, _ in evidence} == {"NMF"} and len(evidence) == 4 * len(PRIOR_SHAPES)
    assert _chosen(out)[1] == 2  # the rank the data were drawn with
    assert "poisson likelihood" in out
    assert figure.stat().st_size > 0
    folds = _fold_scores(out)
    assert len(folds) == 3
    # Fits and folds in parallel (threads sharing nothing) give the same
    # numbers, printed in the same order.
    with parallel_config(backend="threading"):
        assert main(argv[:-2] + ["--n-jobs", "2"]) == 0
    parallel = capsys.readouterr().out
    assert _evidence(parallel) == evidence and _fold_scores(parallel) == folds


def _fold_scores(out):
    return re.findall(r"^\s+\d+\s+\d+\s+(0\.\d{3})\s+(0\.\d{3})\s", out, re.M)


@pytest.mark.parametrize("argv, message", [
    (["--data", "nowhere.npz"], "No such file"),
    (["--data", "data.csv"], "give a shipped name"),
    (["--models", "Tucker"], r"Tucker does not describe these data \(shape"),
    (["--models", "RESCAL-probit"], "RESCAL-probit does not describe these data"),
    (["--models", "PCA"], "unknown pca"),
    (["--ranks", "0-3"], "ranks must be positive"),
    (["--folds", "1"], "give 0 .* or 2 or more"),
    (["--likelihood", "bernoulli"], "needs 0/1 data"),
    (["--key", "Y"], "has no array 'Y'"),
])
def test_bad_arguments_exit_with_a_message(user_counts, argv, message, capsys):
    assert re.search(message, _refused(argv, user_counts, capsys).err)


def _refused(argv, user_counts, capsys):
    """What the command printed when it refused ``argv`` (on the user's
    file unless ``argv`` names one) with exit code 2."""
    if "--data" not in argv:
        argv = ["--data", str(user_counts)] + argv
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    return capsys.readouterr()


@pytest.mark.parametrize("argv, message", [
    (["--folds", "1000"], "--folds 1000: there are only 599 observed entries"),
    (["--folds", "500"], "--folds 500: a held-out fold would hold no non-link.*Use fewer folds"),
    (["--prior-shapes", "nan"], "prior shapes must be positive and finite"),
    (["--n-jobs", "0"], "--n-jobs: 0 fits in parallel means nothing"),
    (["--plot", "/no/such/dir/e.png"], "the folder /no/such/dir does not exist"),
    (["--plot", "{tmp}/evidence.nope"], "name a file ending in one of .*png"),
    (["--ranks", "5-1"], "'5-1' is an empty range"),
    # a rank no array can hold: named as --ranks, with the limit, before any
    # fit (or any list of the range's 10^20 ranks)
    (["--ranks", "99999999999999999999"],
     r"argument --ranks: --ranks=99999999999999999999 is more than the largest rank a factor "
     r"can have, 1152921504606846975 \(2\^60 - 1\)"),
    (["--ranks", "1-99999999999999999999"], r"--ranks=99999999999999999999 is more than"),
    (["--seed", "-1"], "a seed is an integer from 0"),
    (["--data", "{tmp}/zeros.npy"], "every observed entry is zero"),
    (["--data", "{tmp}/text.npy"], "is not a NumPy .npy file.*np.save"),
    (["--data", "{tmp}/empty.npz"], "holds no array"),
])
def test_bad_arguments_are_refused_before_any_fit(user_counts, tmp_path, argv, message, capsys):
    np.save(tmp_path / "zeros.npy", np.zeros((5, 4)))
    (tmp_path / "text.npy").write_text("1,2,3\n4,5,6\n")
    np.savez(tmp_path / "empty.npz")
    captured = _refused([a.format(tmp=tmp_path) for a in argv], user_counts, capsys)
    assert re.search(message, captured.err), captured.err
    assert "Step 1" not in captured.out


def test_a_fit_that_fails_ends_the_command_with_one_line(user_counts, capsys):
    """A prior no fit can use (its rate overflows) is found by the first fit:
    exit 1 with the fit's message, not a traceback."""
    argv = ["--data", str(user_counts), "--prior-shapes", "1e308", "--ranks", "1", "--folds", "0"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m sklearn_pltf: error: ")


@pytest.mark.parametrize("values, message", [
    # one value 5e-324, the rest 0: the mean underflows to 0 (once a ZeroDivisionError)
    ("tiny", r"the mean of the observed entries, 0, underflows float64.*multiply the data"),
    # a subnormal mean: float64 has lost its precision
    ("subnormal", r"the mean of the observed entries, 3\.46e-323, underflows float64"),
    # the sum overflows: the mean is infinite (once a refused prior_rate of 0)
    ("huge", r"the mean of the observed entries is inf in float64 \(their sum overflows\).*"
             r"divide the data"),
])
def test_data_whose_mean_float64_cannot_hold_are_refused_before_any_fit(
        user_counts, tmp_path, values, message, capsys):
    X = {"tiny": np.zeros((6, 5)), "subnormal": np.zeros((6, 5)),
         "huge": np.full((6, 5), 1e308)}[values]
    X[0, 0] = {"tiny": 5e-324, "subnormal": 1e-321, "huge": 1e308}[values]
    path = tmp_path / f"{values}.npy"
    np.save(path, X)
    captured = _refused(["--data", str(path)], user_counts, capsys)
    err = captured.err.strip().splitlines()[-1]
    assert re.search(fr"error: --data {re.escape(str(path))}: {message}", err), err
    assert "Traceback" not in captured.err and "prior_rate" not in captured.err
    assert "Step 1" not in captured.out


def test_a_prior_scaled_to_a_mean_float64_cannot_hold_is_refused():
    from sklearn_pltf.__main__ import scaled_prior_model

    X = np.ones((4, 4, 3))
    for mean in (0.0, 1e-320, np.inf):
        with pytest.raises(ValueError, match="the mean of the observed entries"):
            scaled_prior_model(X, "CP", 2, 1.0, seed=0, mean=mean)
    assert scaled_prior_model(X, "Tucker", 4, 1.0, seed=0, mean=3e-308).prior_rate < np.inf
