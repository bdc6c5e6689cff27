"""Built-in agent adapters, one module per framework, each named after its module
(`openai_agents` is `--agent openai-agents`); each imports its framework lazily.
"""
