"""``python -m sklearn_pltf``: the README's demo runs and reports what it promises."""

import re

from sklearn_pltf.__main__ import PRIOR_SHAPES, main


def test_demo_chooses_a_model_and_predicts_links(capsys):
    candidates = [("CP", 2), ("CP", 5), ("Tucker", 2), ("RESCAL", 2)]
    assert main(candidates=candidates, n_splits=3) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+(CP|Tucker|RESCAL)\s+(\d+)\s+(\d\.\d)\s+(-\d+\.\d)\s+\d+\.\d+$", out, re.M)
    assert len(rows) == len(candidates) * len(PRIOR_SHAPES)  # a progress line per fit
    evidence = {(s, int(r), float(a)): float(e) for s, r, a, e in rows}
    structure, rank, shape = re.search(
        r"Chosen by the evidence: (CP|Tucker|RESCAL), rank (\d+), prior shape (\d\.\d)", out).groups()
    assert evidence[structure, int(rank), float(shape)] == max(evidence.values())
    roc, pr = map(float, re.search(r"AUC-ROC (\d\.\d+) .*AUC-PR (\d\.\d+)", out).groups())
    # Off its diagonal Nations is 19.9% links: a random ranking has AUC-ROC 0.5 and AUC-PR 0.199;
    # the full demo (10 folds, every candidate) reaches about 0.91 and 0.80
    assert roc > 0.85 and pr > 0.6
    assert len(re.findall(r"^\s+[123]\s+333[67]\s+0\.\d{3}\s+0\.\d{3}", out, re.M)) == 3
