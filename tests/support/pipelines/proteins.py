"""A lab's protein pipeline for `kit homology --pipeline`: proteins read from the TSV that
KIT_TEST_PROTEINS names (accession, sequence, label), 3-mer counts, a logistic regression and a
forest; it returns the test proteins' ids and the train proteins' ids beside the truth."""

import os

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

SEEDS = ("split", "forest")
KINDS = {"ids": "proteins", "train_ids": "train proteins", "y_test": "truth",
         "p_lr": "probabilities", "p_rf": "probabilities"}
AMINO = {a: i for i, a in enumerate("ACDEFGHIKLMNPQRSTVWY")}
TRAIN = 2 / 3  # of the rows: 200 of 300


def kmers(seq):
    """3-mer counts per 100 residues: 8,000 columns."""
    code = np.array([AMINO[a] for a in seq if a in AMINO])
    x = np.bincount(code[:-2] * 400 + code[1:-1] * 20 + code[2:], minlength=8000)
    return 100 * x / max(len(code), 1)


def run(seeds):
    with open(os.environ["KIT_TEST_PROTEINS"]) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    ids = np.array([r[0] for r in rows])
    X = np.stack([kmers(r[1]) for r in rows])
    y = np.array([int(r[2]) for r in rows])
    order = np.random.default_rng(seeds["split"]).permutation(len(rows))
    n_train = round(TRAIN * len(rows))
    train, test = order[:n_train], order[n_train:]
    lr = LogisticRegression(C=10, max_iter=3000).fit(X[train], y[train])
    rf = RandomForestClassifier(100, random_state=seeds["forest"], n_jobs=1).fit(X[train], y[train])
    return {"ids": ids[test], "train_ids": ids[train], "y_test": y[test],
            "p_lr": lr.predict_proba(X[test])[:, 1], "p_rf": rf.predict_proba(X[test])[:, 1]}
