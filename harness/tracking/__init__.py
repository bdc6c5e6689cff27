"""Runs over time: baselines and their comparison, the run history and its trend, and the
commands that check reports (verify) and combine shards (merge).
"""
