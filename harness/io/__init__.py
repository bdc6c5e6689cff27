"""What crosses the harness's own edges, made safe: files users name read within bounds,
data checked against a schema with every problem at its JSON path, untrusted text made safe
for every output, and report files written whole or not at all.
"""
