"""The results file: its format, validation, loading and saving."""
