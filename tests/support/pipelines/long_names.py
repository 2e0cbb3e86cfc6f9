"""A pipeline whose names are long (issue 43): its file is copied to a long file name, its one
model's output and its seeds have long names, so every heading and prose line that names them
is wider than 80 columns unless wrapped."""
import numpy as np

SEEDS = ("initialisation_of_the_embedding_generator", "split")
KINDS = {"an_extremely_long_output_name_for_the_probabilities_of_class": "probabilities",
         "truth_labels_for_the_held_out_rows": "truth"}


def run(seeds):
    r = np.random.default_rng(seeds["initialisation_of_the_embedding_generator"]
                              + 7 * seeds["split"])
    return {"an_extremely_long_output_name_for_the_probabilities_of_class": r.random(20),
            "truth_labels_for_the_held_out_rows": (np.arange(20) % 2).astype(np.int64)}
