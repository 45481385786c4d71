// Kafka's Java consumer measured the way fastkc_tools/bench/common.py measures the
// Python clients, so its steady-state figure compares like with like
// (ConsumerPerformance only reports its own start -> end window).
//
// Usage: SteadyStateConsumer <bootstrap> <topic> <expected records> <ends: 0=N,1=M,...> <timeout s>
//
// assign() every partition, seekToBeginning, then poll(Duration) until the
// end offsets; the key and value of every record are touched (their lengths
// summed, as ConsumerPerformance does and as fastkc_tools/bench/common.py says every
// runner must), and the sum is printed as touched_bytes. Clock: first poll,
// first record, last record (System.nanoTime); the process CPU over first poll -> last record. The stop rule is common.drain's:
// the count reached, or an empty poll with every position at its end offset;
// then the positions must be at the ends, and the count must match, else exit 2
// (a fast wrong answer is not a result). Prints one JSON line.
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class SteadyStateConsumer {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: SteadyStateConsumer <bootstrap> <topic> <expected> <0=N,1=M,...> <timeout s>");
            System.exit(64);
        }
        String bootstrap = args[0];
        String topic = args[1];
        long expected = Long.parseLong(args[2]);
        Map<TopicPartition, Long> ends = new HashMap<>();
        for (String item : args[3].split(",")) {
            String[] kv = item.split("=");
            ends.put(new TopicPartition(topic, Integer.parseInt(kv[0])), Long.parseLong(kv[1]));
        }
        double timeoutSeconds = Double.parseDouble(args[4]);

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        // The same work as every other client: CRCs checked, uncommitted reads, no group.
        props.put(ConsumerConfig.CHECK_CRCS_CONFIG, "true");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");

        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        List<TopicPartition> tps = new ArrayList<>(ends.keySet());
        long records = 0;
        long touchedBytes = 0;
        long firstDelivery = 0;
        long started, firstRecord = -1, lastRecord = -1;
        long cpuStarted, cpuLastRecord = -1;
        Map<Integer, Long> where = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + (long) (timeoutSeconds * 1e9);
            cpuStarted = os.getProcessCpuTime();
            started = System.nanoTime();
            while (true) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(1000));
                int n = batch.count();
                if (n > 0) {
                    for (ConsumerRecord<byte[], byte[]> record : batch) {
                        byte[] key = record.key();
                        byte[] value = record.value();
                        if (key != null) {
                            touchedBytes += key.length;
                        }
                        if (value != null) {
                            touchedBytes += value.length;
                        }
                    }
                    records += n;
                    long now = System.nanoTime();
                    if (firstRecord < 0) {
                        firstRecord = now;
                        firstDelivery = n;
                    }
                    lastRecord = now;
                    cpuLastRecord = os.getProcessCpuTime();
                    if (records >= expected) {
                        break;
                    }
                } else if (atEnd(consumer, ends)) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    System.err.printf("timed out after %.0fs with %d of %d records%n", timeoutSeconds, records, expected);
                    System.exit(3);
                }
            }
            for (TopicPartition tp : tps) {
                where.put(tp.partition(), consumer.position(tp));
            }
            if (!atEnd(consumer, ends)) {
                System.err.println("stopped at positions " + where + ", the end offsets are " + args[3]);
                System.exit(2);
            }
        }
        if (records != expected) {
            System.err.printf("read %d records, the topic holds %d%n", records, expected);
            System.exit(2);
        }
        long steady = records - firstDelivery;
        double steadySeconds = (lastRecord - firstRecord) / 1e9;
        boolean hasSteady = steady > 0 && lastRecord > firstRecord;
        System.out.printf(java.util.Locale.ROOT,
            "{\"records\": %d, \"seconds\": %.9f, \"steady_seconds\": %s, \"steady_records\": %s, "
            + "\"first_delivery_records\": %d, \"time_to_first_record_seconds\": %.9f, \"cpu_seconds\": %.6f, "
            + "\"touched_bytes\": %d, \"java_version\": \"%s\"}%n",
            records, (lastRecord - started) / 1e9,
            hasSteady ? String.format(java.util.Locale.ROOT, "%.9f", steadySeconds) : "null",
            hasSteady ? Long.toString(steady) : "null",
            firstDelivery, (firstRecord - started) / 1e9, (cpuLastRecord - cpuStarted) / 1e9,
            touchedBytes, System.getProperty("java.version"));
    }

    private static boolean atEnd(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
