"""The broker connection: one I/O-free protocol core (core.py) and the
drivers that move its bytes — fastkc.conn.BrokerConnection (non-blocking
socket under KafkaClient's selector), blocking.py (one request at a time,
for tools, tests and the broker harness) and aio.py (asyncio)."""
