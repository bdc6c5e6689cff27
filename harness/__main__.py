"""`python -m harness eval run` is `zeroclaw eval run`."""

import sys

from harness.cli import main

sys.exit(main())
