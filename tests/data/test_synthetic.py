"""kit.data.synthetic: shaped like the paper's Swiss-Prot subset, deterministic."""

import numpy as np

from kit.data.synthetic import ORGANISMS, generate
from kit.worker.pipeline import AMINO_ACIDS


def test_deterministic():
    assert generate(300) == generate(300)
    assert generate(300)[1] != generate(300, seed=1)[1]


def test_shape_of_the_paper_subset():
    ids, seqs, labels, orgs = generate(3000)
    lengths = np.array([len(s) for s in seqs])
    assert len(seqs) == 3000 and len(set(ids)) == 3000
    assert lengths.min() >= 60 and lengths.max() <= 700
    assert 300 < lengths.mean() < 375  # paper: mean length 337
    assert 0.20 < np.mean(labels) < 0.28  # paper: 23.5% transmembrane
    assert set(orgs) == set(ORGANISMS)
    assert set("".join(seqs)) <= set(AMINO_ACIDS)
