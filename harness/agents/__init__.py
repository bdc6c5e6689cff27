"""Agents: the protocol a loop or an adapter implements (`protocol`), resolving an `agent`
setting (`registry`), and the built-in framework adapters (`frameworks/`, one module a
framework, each importing its framework lazily)."""
