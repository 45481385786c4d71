"""`fastkc bench` and `fastkc bench-rebalance`, inside the package so an
installed fastkc runs them from any directory.

driver.py prepares one topic and runs every client on it, each in its own
process (`python -m fastkc_tools.bench.run_<client>`, timed the same way by
common.py); curves.py runs several datasets; run_java*.py time Kafka's Java
consumer (java/SteadyStateConsumer.java, compiled on first use). rebalance.py
times group rebalances with group_worker.py's member processes. The clients
other than fastkc (kafka-python, aiokafka, confluent-kafka, Java) are optional:
a runner whose client is missing fails its own row (the others still run).
"""
