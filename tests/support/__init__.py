"""Test-only helpers: an independent encoder of Kafka record batches (batchgen)."""
