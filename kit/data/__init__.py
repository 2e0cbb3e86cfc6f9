"""Datasets: the built-in synthetic set, imported files, and (later) the Swiss-Prot subset."""

from .dataset import Dataset, load_dataset, make_dataset, save_dataset, stored_datasets

__all__ = ["Dataset", "load_dataset", "make_dataset", "save_dataset", "stored_datasets"]
