"""Request snapshots: what each agent of a case shows its model that no scripted answer
decides (instructions, the tools offered with their descriptions and JSON schemas, the
output schema), rendered as stable text, kept in files beside the suite, and checked
against every replay run; `--update-snapshots` (and `eval record`) writes them."""
