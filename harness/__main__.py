"""`python -m harness eval run` is `zeroclaw eval run`."""

from harness.console import main

main()
