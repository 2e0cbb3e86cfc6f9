"""The built-in synthetic protein set: what a machine without internet audits.

It is shaped like the paper's Swiss-Prot subset (12 organisms, lengths 60-700 with mean near
337, about 23.5% positives) and, more importantly, it is *hard in the same way*: proteins come in
families of diverged homologues, positives carry 1-7 hydrophobic transmembrane-like helices,
many negatives carry a hydrophobic signal peptide or a buried hydrophobic stretch, and a few
labels are wrong, as annotations are. docs/data.md reports its calibration.
"""

from __future__ import annotations

import numpy as np

from ..worker.pipeline import AMINO_ACIDS

SEED = 20261005
ORGANISMS = (
    "human",
    "mouse",
    "budding yeast",
    "fission yeast",
    "E. coli K-12",
    "B. subtilis",
    "Arabidopsis",
    "Drosophila",
    "C. elegans",
    "M. tuberculosis",
    "Dictyostelium",
    "zebrafish",
)
# UniProtKB/Swiss-Prot overall residue frequencies (percent), in AMINO_ACIDS order.
_BACKGROUND = np.array(
    [
        8.25,
        1.38,
        5.46,
        6.72,
        3.86,
        7.07,
        2.27,
        5.91,
        5.80,
        9.64,
        2.41,
        4.06,
        4.74,
        3.93,
        5.53,
        6.64,
        5.35,
        6.86,
        1.10,
        2.92,
    ]
)
_HYDROPHOBIC = (
    np.array(
        [
            3.0,
            1.5,
            0.05,
            0.05,
            2.5,
            1.5,
            0.1,
            3.5,
            0.05,
            4.5,
            1.5,
            0.1,
            0.3,
            0.1,
            0.05,
            0.8,
            0.8,
            3.5,
            1.0,
            0.8,
        ]
    )
    ** 3
)
# (cubed: helices must read as L/I/V/F-rich 3-mers, not as a slightly odd composition)
_POSITIVE_RATE = 0.235
_FAMILY_SIZE = 4.0  # mean members per family (geometric)
_DIVERGENCE = (0.10, 0.40)  # substitution rate range between a member and its family ancestor
_LABEL_NOISE = 0.03  # annotation errors: labels flipped at random
_DECOY_RATE = 0.40  # negatives with a signal peptide or buried hydrophobic stretch
_WEAK_TM_RATE = 0.25  # positives whose helices are short and only weakly hydrophobic


def _profile(weights):
    p = np.asarray(weights, dtype=np.float64)
    return p / p.sum()


def _length(rng):
    # log-normal clipped to the paper's bounds; mean lands near 337
    return int(np.clip(rng.lognormal(np.log(300), 0.5), 60, 700))


def _segment(rng, length, strength):
    """A hydrophobic helix: a mix of the hydrophobic and background profiles."""
    p = _profile(strength * _profile(_HYDROPHOBIC) + (1 - strength) * _profile(_BACKGROUND))
    return rng.choice(20, size=length, p=p)


def _ancestor(rng, organism_profile, positive):
    L = _length(rng)
    seq = rng.choice(20, size=L, p=organism_profile)
    if positive:
        weak = rng.random() < _WEAK_TM_RATE
        n_tm = 1 if weak else int(rng.choice([1, 1, 2, 4, 6, 7]))
        slots = np.arange(15, L - 25, 45)  # helix start positions, one loop apart
        slots = np.sort(rng.choice(slots, size=min(n_tm, len(slots)), replace=False))
        for s in slots:
            seg_len = int(rng.integers(14, 18) if weak else rng.integers(18, 25))
            seq[s : s + seg_len] = _segment(rng, min(seg_len, L - s), 0.55 if weak else 0.85)
    elif rng.random() < _DECOY_RATE:
        # a signal peptide at the N-terminus or a buried hydrophobic core stretch
        start = 1 if rng.random() < 0.6 else int(rng.integers(20, max(21, L - 30)))
        seg_len = int(rng.integers(10, 20))
        seq[start : start + seg_len] = _segment(rng, min(seg_len, L - start), 0.7)
    return seq


def _member(rng, ancestor, organism_profile, divergence):
    seq = ancestor.copy()
    mutate = rng.random(len(seq)) < divergence
    seq[mutate] = rng.choice(20, size=int(mutate.sum()), p=organism_profile)
    # small indels keep k-mer sets from lining up perfectly
    if len(seq) > 80 and rng.random() < 0.5:
        cut = int(rng.integers(10, len(seq) - 10))
        seq = np.delete(seq, slice(cut, cut + int(rng.integers(1, 8))))
    return seq


def generate(n=6000, seed=SEED):
    """Return (ids, seqs, labels, organisms), n proteins, deterministic in (n, seed)."""
    if n < 1:
        raise ValueError("--n must be a positive number of proteins")
    rng = np.random.default_rng(seed)
    org_profiles = [
        _profile(_BACKGROUND * rng.dirichlet(np.full(20, 60.0)) * 20) for _ in ORGANISMS
    ]
    org_tm = np.clip(rng.normal(1.0, 0.25, len(ORGANISMS)), 0.5, 1.5)
    letters = np.array(list(AMINO_ACIDS))
    ids, seqs, labels, orgs = [], [], [], []
    while len(seqs) < n:
        o = int(rng.integers(len(ORGANISMS)))
        positive = rng.random() < _POSITIVE_RATE * org_tm[o] / org_tm.mean()
        anc = _ancestor(rng, org_profiles[o], positive)
        div = rng.uniform(*_DIVERGENCE)
        for _ in range(int(rng.geometric(1 / _FAMILY_SIZE))):
            if len(seqs) == n:
                break
            # homologues spread over organisms, each with its own residue background
            m = int(rng.integers(len(ORGANISMS))) if rng.random() < 0.5 else o
            s = _member(rng, anc, org_profiles[m], div)
            if not 60 <= len(s) <= 700:
                continue
            label = positive ^ (rng.random() < _LABEL_NOISE)
            ids.append(f"SYN{len(seqs):05d}")
            seqs.append("".join(letters[s]))
            labels.append(int(label))
            orgs.append(ORGANISMS[m])
    # families were emitted together; the dataset's split shuffle separates them
    return ids, seqs, labels, orgs
