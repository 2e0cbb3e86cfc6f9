"""Output: text tables that fit the terminal, the report, shared formatting."""
