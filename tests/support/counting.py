"""A mixin for the Schema Registry deserializers in the consumer tests:
counts the per-value calls and the batch calls fastkc makes, so a test can
show the consumers took the batch path (`class CountingX(CountsCalls, X)`)."""


class CountsCalls:
    """Counts `__call__` (per value) and `deserialize_many` (per batch)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.per_value_calls = 0
        self.batch_calls = 0

    def __call__(self, data, ctx=None):
        self.per_value_calls += 1
        return super().__call__(data, ctx)

    def deserialize_many(self, *args, **kwargs):
        self.batch_calls += 1
        return super().deserialize_many(*args, **kwargs)
