"""The pytest plugin (`pytest --zeroclaw DIR`): each case a pytest item, and where its
suites go among the paths pytest collects.
"""
