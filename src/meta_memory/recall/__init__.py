"""Recall: text normalisation, the full-text index, ranking and recall providers."""
