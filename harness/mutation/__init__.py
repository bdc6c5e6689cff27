"""Mutation testing: the mutants of a case and `zeroclaw eval mutate`, which runs each
through the real agent.
"""
