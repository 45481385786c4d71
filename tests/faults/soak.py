"""`python -m tests.faults.soak`: the soak's command line (the soak itself
is tests/support/faults/soak.py, which tests/faults/test_soak.py runs in its
quick mode); see that module for the options."""
import sys

from tests.support.faults.soak import main

if __name__ == "__main__":
    sys.exit(main())
