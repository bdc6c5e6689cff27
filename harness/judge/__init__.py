"""The LLM judge of `expects.judge`: its prompt template and strict reply parser, the call to
an OpenAI-compatible judge (through the live backend), the replay store of its replies,
calibration by confidence bounds, and the `zeroclaw eval calibrate` commands."""
