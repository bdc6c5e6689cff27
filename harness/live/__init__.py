"""Live mode: the backend over an OpenAI-compatible provider, its wire format, the limiter
every backend of a run shares, and the recorder that turns a live run into a replay fixture.
"""
