"""Moved to fastkc.net.blocking (a driver of the connection core); this name
stays only until every importer on other branches uses the new one (the
typing branch's fastkc/bench/ still imports it here). Delete it then."""
from fastkc.net.blocking import BlockingConnection

__all__ = ["BlockingConnection"]
