"""Every target of the performance issue in one run: each benchmark module of this directory
that has `targets(quick)` is imported and asked, and each target printed with its figure,
met or MISSED.

    python benchmarks/targets.py [--quick] [--only startup,workers]

A benchmark module that is not there is said and skipped. The exit code is 0 when every
target printed was met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Target

# The modules with targets, in the order: flat memory, workers and start-up, own
# cost per case.
MODULES = ("memory", "workers", "per_case", "startup")


def collect(names: list[str], quick: bool) -> tuple[list[Target], list[str]]:
    """The targets of each module named, and what could not be measured, said."""
    found: list[Target] = []
    notes: list[str] = []
    for name in names:
        if not (Path(__file__).resolve().parent / f"{name}.py").exists():
            notes.append(f"{name}: no benchmarks/{name}.py here, skipped")
            continue
        module = importlib.import_module(name)
        asked = getattr(module, "targets", None)
        if asked is None:
            notes.append(f"{name}: has no targets(quick), skipped")
            continue
        start = time.perf_counter()
        try:
            got: list[Target] = asked(quick)
        except (Exception, SystemExit) as exc:  # one benchmark failing leaves the others
            traceback.print_exc()
            notes.append(f"{name}: failed ({type(exc).__name__}: {exc})")
            continue
        for target in got:
            print(target.line(), flush=True)
        print(f"  ({name}: {time.perf_counter() - start:.0f} s)", flush=True)
        found.extend(got)
    return found, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark's quick run")
    parser.add_argument("--only", help=f"a comma-separated choice of {', '.join(MODULES)}")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(MODULES)
    found, notes = collect(names, args.quick)
    for note in notes:
        print(note)
    missed = [t for t in found if not t.met]
    print(f"{len(found) - len(missed)} of {len(found)} targets met")
    sys.exit(1 if missed or not found else 0)


if __name__ == "__main__":
    main()
