"""Evaluation: baselines, performance-budget sweeps and the paper's metrics (P@T, P@L, AUC)."""
