"""python3 -m tests.support.msk_reference: resolve and compile AWS's reference signer (scripts/setup.sh)."""
import sys

from tests.support.msk_reference import main

sys.exit(main())
