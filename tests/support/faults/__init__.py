"""The fault campaign's library (tests/faults/ runs it): the ledger every
scenario is checked by (accounting), the scenario runner, the toxiproxy
client and server, the proxied cluster, and the soak."""
