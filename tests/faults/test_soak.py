"""The soak's quick mode in CI (tests/support/faults/soak.py; the long mode is
`python -m tests.faults.soak --minutes 25`): two fastkc members for 78 s
on the shared proxied cluster, a rebalance and a fault every 8 s (toxics in
turn, one broker kill -9 + restart), RSS / fds / threads sampled every 2 s;
after the 25 s warm-up no slope may pass its bound and the ledger
must be clean. soak.json and soak.md are written under the test's tmp dir
(FASTKC_SOAK_OUT=dir keeps them elsewhere)."""
import os

import pytest

from tests.support.faults import soak

pytestmark = [pytest.mark.faults, pytest.mark.cluster, pytest.mark.slow]


def test_soak_quick(cluster, tmp_path):
    out = os.environ.get("FASTKC_SOAK_OUT") or str(tmp_path)
    result = soak.run(cluster, out_dir=out, **soak.QUICK)
    print("\n" + soak.markdown(result))
    assert not result["ledger_failures"], result["ledger_failures"]
    assert not result["over_bounds"], (result["over_bounds"], result["slopes_per_minute"])
    assert result["ledger"]["lost"] == 0 and result["rebalances"] >= 4
