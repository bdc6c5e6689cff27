"""The process the harness runs in: signals as interruptions, deadlines, the event loop
cases run on, the garbage collector's frozen heap, and workers that never outlive the
harness.
"""
