"""The fetch path: an I/O-free state machine (machine.py, FetchMachine, the
facade over its parts: planner.py, offsets.py, buffer.py) and its
synchronous driver over KafkaClient (driver.py, Fetcher). See machine.py's
docstring for the driving contract and DESIGN.md "The fetch path" for the map."""
from fastkc.fetch.completed import CompletedFetch
from fastkc.fetch.driver import Fetcher
from fastkc.fetch.machine import FetchMachine
from fastkc.fetch.offsets import EARLIEST, LATEST, list_offsets_results
from fastkc.fetch.session import FetchSession
from fastkc.fetch.state import (
           TRANSITIONS,
           FetchState,
           IllegalFetchStateTransition,
           PartitionState,
)

__all__ = ["CompletedFetch", "EARLIEST", "FetchMachine", "FetchSession", "FetchState", "Fetcher",
           "IllegalFetchStateTransition", "LATEST", "PartitionState", "TRANSITIONS",
           "list_offsets_results"]
