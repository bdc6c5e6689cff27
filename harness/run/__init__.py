"""Running cases: one case through the agent's loop (runner), the cases of a run watched on
their deadlines (watchdog) or spread over worker processes, replay, and repeated runs.
"""
