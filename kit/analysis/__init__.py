"""Reading runs: comparisons, verdicts, the budget, amplification and advice."""
