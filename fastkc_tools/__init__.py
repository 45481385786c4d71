"""fastkc's tools, shipped beside the library and never imported by it: the
local Apache Kafka harness (`broker`: Kafka and a Schema Registry resolved
from Maven Central and started on 127.0.0.1), the benchmark suite (`bench`,
`bench_ceiling`) and the sample run (`sample_run`). The `fastkc` command
(fastkc/cli.py) reaches them; an application's `import fastkc` loads none
of them (tests/quality/test_tool_imports.py)."""
