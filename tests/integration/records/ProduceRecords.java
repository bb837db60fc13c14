import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes the records of the segment-decoding proof with Kafka's own producer.
 *
 * Usage: ProduceRecords OUTPUT BOOTSTRAP SCENARIO TOPIC:CODEC[:CONFIG=VALUE...]...
 * SCENARIO "transactions": idempotent records with headers, then interleaved transactions of two
 * producers that commit and abort. SCENARIO "plain": no idempotence, no headers (message formats
 * v0/v1 cannot carry them). SCENARIO "open-transaction": "transactions", then a third producer
 * leaves a transaction open (outcome "open": its producer is closed without ending it, with a
 * 15-minute transaction timeout) and a fourth commits one after it. Each topic is created (one partition, the given configs) and written
 * with its own compression.type, all topics at once. Every acknowledged record is written to OUTPUT
 * (not stdout, which the client's logging may share) as one tab-separated line:
 * topic, offset, timestamp, outcome (none/commit/abort), key, value, headers, where a byte string
 * is hex and null is "-", and headers are "keyhex=valuehex" joined by ",".
 */
public final class ProduceRecords {
    private static final HexFormat HEX = HexFormat.of();
    // Fixed create times well in the past: the broker accepts them, and the proof can see them exactly.
    private static final long BASE_TIME = 1_600_000_000_000L;

    private record Sent(Future<RecordMetadata> ack, byte[] key, byte[] value, Header[] headers) {}

    private record Phase(String outcome, List<Sent> sent) {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        String scenario = args[2];
        List<String[]> specs = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            specs.add(args[i].split(":"));
        }
        createTopics(bootstrap, specs);
        ExecutorService pool = Executors.newFixedThreadPool(specs.size());
        List<Future<TopicRun>> runs = new ArrayList<>();
        for (String[] spec : specs) {
            TopicRun run = new TopicRun(bootstrap, spec[0], spec[1]);
            runs.add(pool.submit(() -> switch (scenario) {
                case "transactions" -> run.transactions();
                case "open-transaction" -> run.transactions().openTransaction();
                default -> run.plain();
            }));
        }
        StringBuilder out = new StringBuilder();
        for (Future<TopicRun> run : runs) {
            run.get().report(out);
        }
        pool.shutdown();
        Files.writeString(Path.of(args[0]), out, StandardCharsets.UTF_8);
    }

    private static void createTopics(String bootstrap, List<String[]> specs) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        List<NewTopic> created = new ArrayList<>();
        for (String[] spec : specs) {
            Map<String, String> configs = new HashMap<>();
            for (int i = 2; i < spec.length; i++) {
                String[] kv = spec[i].split("=", 2);
                configs.put(kv[0], kv[1]);
            }
            created.add(new NewTopic(spec[0], 1, (short) 1).configs(configs));
        }
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(created).all().get();
        }
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private static String hex(byte[] b) {
        return b == null ? "-" : HEX.formatHex(b);
    }

    /** One topic's producers and what they sent, phase by phase. */
    private static final class TopicRun {
        private final String bootstrap;
        private final String topic;
        private final String codec;
        private final List<Phase> phases = new ArrayList<>();
        private int serial;

        TopicRun(String bootstrap, String topic, String codec) {
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.codec = codec;
        }

        private Producer<byte[], byte[]> producer(Map<String, String> extra) {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("compression.type", codec);
            props.put("acks", "all");
            // Records go out only on flush(), so the records of one phase share one batch.
            props.put("linger.ms", "60000");
            props.put("batch.size", "262144");
            props.putAll(extra);
            return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        }

        /** Sends the next record: nulls, empties, non-ASCII text, a long value, headers, explicit times. */
        private void send(Producer<byte[], byte[]> producer, Phase phase, boolean withHeaders) {
            int n = serial++;
            byte[] key = utf8(switch (n % 5) {
                case 0 -> null;
                case 1 -> "";
                case 2 -> "clé-" + n + " ünïcödé ☃";
                default -> "key-" + n;
            });
            byte[] value = utf8(switch (n % 7) {
                case 0 -> null;
                case 1 -> "";
                case 2 -> ("wert " + n + " — ").repeat(300);
                default -> "value-" + n + " payload: with spaces";
            });
            Header[] headers = !withHeaders ? new Header[0] : switch (n % 4) {
                case 0 -> new Header[0];
                case 1 -> new Header[] {new RecordHeader("h", utf8("v" + n))};
                case 2 -> new Header[] {new RecordHeader("dup", utf8("a")), new RecordHeader("dup", new byte[0]),
                                        new RecordHeader("nullable", (byte[]) null)};
                default -> new Header[] {new RecordHeader("hé-" + n, new byte[] {0, (byte) 0xff, (byte) n})};
            };
            // Every third record keeps the producer's clock; the others jump back and forth in time,
            // so that batches hold negative timestamp deltas too.
            Long timestamp = n % 3 == 0 ? null : BASE_TIME + (n % 2 == 0 ? n * 1000L : -n * 7L);
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, 0, timestamp, key, value,
                                                                         List.of(headers));
            phase.sent().add(new Sent(producer.send(record), key, value, headers));
        }

        private void batch(Producer<byte[], byte[]> producer, String outcome, int count, boolean withHeaders) {
            Phase phase = new Phase(outcome, new ArrayList<>());
            for (int i = 0; i < count; i++) {
                send(producer, phase, withHeaders);
            }
            producer.flush();
            phases.add(phase);
        }

        TopicRun plain() {
            try (Producer<byte[], byte[]> p = producer(Map.of("enable.idempotence", "false"))) {
                batch(p, "none", 1, false);
                batch(p, "none", 40, false);
                batch(p, "none", 3, false);
                batch(p, "none", 25, false);
            }
            return this;
        }

        TopicRun transactions() throws InterruptedException {
            try (Producer<byte[], byte[]> p = producer(Map.of("enable.idempotence", "true"))) {
                batch(p, "none", 1, true);
                batch(p, "none", 30, true);
            }
            Map<String, String> a = Map.of("transactional.id", topic + "-a");
            Map<String, String> b = Map.of("transactional.id", topic + "-b");
            try (Producer<byte[], byte[]> pa = producer(a); Producer<byte[], byte[]> pb = producer(b)) {
                pa.initTransactions();
                pb.initTransactions();
                // Interleaved: a's aborted transaction spans b's committed one on the same partition.
                pa.beginTransaction();
                batch(pa, "abort", 12, true);
                pb.beginTransaction();
                batch(pb, "commit", 9, true);
                batch(pa, "abort", 5, true);
                pb.commitTransaction();
                // The topics roll segments after 100 ms: a's aborted transaction now spans two segments.
                Thread.sleep(150);
                batch(pa, "abort", 3, true);
                pa.abortTransaction();

                pa.beginTransaction();
                batch(pa, "commit", 20, true);
                pa.commitTransaction();

                pb.beginTransaction();
                batch(pb, "abort", 1, true);
                pb.abortTransaction();

                pb.beginTransaction();
                batch(pb, "commit", 7, true);
                batch(pb, "commit", 4, true);
                pb.commitTransaction();
            }
            return this;
        }

        TopicRun openTransaction() {
            Producer<byte[], byte[]> open = producer(Map.of("transactional.id", topic + "-open",
                                                            "transaction.timeout.ms", "900000"));
            open.initTransactions();
            open.beginTransaction();
            batch(open, "open", 6, true);
            try (Producer<byte[], byte[]> after = producer(Map.of("transactional.id", topic + "-after"))) {
                after.initTransactions();
                after.beginTransaction();
                batch(after, "commit", 5, true);
                after.commitTransaction();
            }
            // A zero timeout closes without the abort a normal close() sends for an open transaction.
            open.close(Duration.ZERO);
            return this;
        }

        void report(StringBuilder out) throws Exception {
            for (Phase phase : phases) {
                for (Sent s : phase.sent()) {
                    RecordMetadata md = s.ack().get();
                    List<String> headers = new ArrayList<>();
                    for (Header h : s.headers()) {
                        headers.add(hex(utf8(h.key())) + "=" + hex(h.value()));
                    }
                    out.append(String.join("\t", topic, Long.toString(md.offset()), Long.toString(md.timestamp()),
                                           phase.outcome(), hex(s.key()), hex(s.value()), String.join(",", headers)))
                       .append('\n');
                }
            }
        }
    }
}
