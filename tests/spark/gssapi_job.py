"""Run by tests/integration/test_gssapi.py in its own process: a local Spark
session reads a topic through a GSSAPI listener, configured with Spark's
Kafka options as a Spark user writes them (kafka.sasl.jaas.config with
Java's Krb5LoginModule, keytab and principal), and prints the rows as JSON
on the last line of stdout.

Its own process because the Python workers must see the realm's KRB5_CONFIG
from their start (libkrb5 reads it from the environment, as executors on a
Kerberos cluster read /etc/krb5.conf); the test passes it in the environment.

    python tests/spark/gssapi_job.py BOOTSTRAP TOPIC KEYTAB PRINCIPAL
"""
import base64
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _b64(value):
    return None if value is None else base64.b64encode(bytes(value)).decode("ascii")


def main(bootstrap, topic, keytab, principal):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p and p != ROOT])
    sys.path.insert(0, ROOT)
    from pyspark.sql import SparkSession

    import fastkc.spark

    spark = (SparkSession.builder.master("local[1]").appName("fastkc-gssapi-check")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
             .config("spark.sql.shuffle.partitions", "1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    fastkc.spark.register(spark)
    try:
        df = (spark.read.format("fastkc")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("kafka.security.protocol", "SASL_PLAINTEXT")
              .option("kafka.sasl.mechanism", "GSSAPI")
              .option("kafka.sasl.kerberos.service.name", "kafka")
              .option("kafka.sasl.jaas.config",
                      'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                      'keyTab="{0}" principal="{1}";'.format(keytab, principal))
              .option("subscribe", topic)
              .load())
        rows = [[r.partition, r.offset, _b64(r.key), _b64(r.value)]
                for r in df.select("partition", "offset", "key", "value").collect()]
        print(json.dumps({"rows": sorted(rows, key=lambda r: (r[0], r[1]))}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
