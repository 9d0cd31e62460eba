#!/usr/bin/env python3
"""No function over 150 lines outside the header either: the CLI, the tools, the tests and the
examples, C and Python, counted as tools/fn_lengths.py counts them (C: the definition's first
line at column 0 to its closing brace; Python: the ast module). tests/test_header.c checks the
header. A long function is split along its comments into named steps.

    tests/test_fn_lengths.py

Ends with "N passed, N failed"."""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_testlib import ROOT, Checks  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))
import fn_lengths  # noqa: E402

MAX_LINES = 150
PATTERNS = ["cli/*.c", "cli/*.h", "tools/*.c", "tools/*.h", "tools/*.py", "tests/*.c", "tests/*.h", "tests/*.py",
            "tests/fuzz/*.c", "tests/fuzz/*.h", "tests/compile/*.c", "examples/*.c", "mlstack_cuda.h", "mlstack_mpi.h"]


def main():
    T = Checks()
    files = sorted(f for p in PATTERNS for f in glob.glob(os.path.join(ROOT, p)))
    n_fn = {"c": 0, "py": 0}
    for path in files:
        py = path.endswith(".py")
        found = fn_lengths.py_functions(path) if py else fn_lengths.c_functions(path)
        n_fn["py" if py else "c"] += len(found)
        for length, name, _, line in found:
            T.check(length <= MAX_LINES, f"{os.path.relpath(path, ROOT)}:{line}: {name} is {length} lines "
                    f"(over {MAX_LINES}): split it along its comments")
    # the counter itself still finds functions (a parser that finds none would pass everything)
    T.check(n_fn["c"] > 500 and n_fn["py"] > 300, "functions found in C and Python files", n_fn)
    T.finish()


if __name__ == "__main__":
    main()
