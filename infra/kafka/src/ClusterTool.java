import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Helpers for infra/kafka/start, run in one JVM where possible (a JVM start is the slow part).
 *
 * <p>{@code format CLUSTER_ID [--scram-file FILE] CONFIG...}: formats each node's storage, as
 * kafka-storage.sh would; each line of FILE ({@code SCRAM-SHA-512=[name=U,password=P]}) adds a
 * SCRAM user, as its --add-scram does (read from a file so that no password is on a command line).
 *
 * <p>{@code ready BOOTSTRAP BROKERS TIMEOUT_SECONDS [CLIENT_PROPERTIES]}: with the client settings
 * in CLIENT_PROPERTIES (security protocol, SASL, trust store) if given, waits until a fresh cluster really serves: every broker registered, a topic replicated to all
 * of them accepts an acks=all write, a transaction commits and a group offset commits. The last
 * two create __transaction_state and __consumer_offsets now, so a client's first transaction
 * or group join does not pay for it.
 */
public final class ClusterTool {
  public static void main(String[] args) throws Exception {
    if (args.length >= 3 && args[0].equals("format")) {
      int first = 2;
      List<String> scram = new ArrayList<>();
      if (args[2].equals("--scram-file") && args.length >= 5) {
        for (String line : Files.readAllLines(Path.of(args[3]))) {
          if (!line.isBlank()) {
            scram.add("--add-scram");
            scram.add(line.trim());
          }
        }
        first = 4;
      }
      for (int i = first; i < args.length; i++) {
        List<String> call = new ArrayList<>(List.of("format", "--cluster-id", args[1], "--config", args[i]));
        call.addAll(scram);
        int code = kafka.tools.StorageTool.execute(call.toArray(new String[0]), System.err);
        if (code != 0) System.exit(code);
      }
      return;
    }
    if ((args.length == 4 || args.length == 5) && args[0].equals("ready")) {
      Properties client = new Properties();
      if (args.length == 5) client = load(args[4]);
      ready(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]), client);
      return;
    }
    System.err.println(
        "usage: ClusterTool format CLUSTER_ID [--scram-file FILE] CONFIG... | ready BOOTSTRAP BROKERS TIMEOUT_S [CLIENT_PROPERTIES]");
    System.exit(2);
  }

  private static Properties load(String file) throws IOException {
    Properties p = new Properties();
    try (Reader r = new FileReader(file)) {
      p.load(r);
    }
    return p;
  }

  private static void ready(String bootstrap, int brokers, long timeoutSeconds, Properties client)
      throws Exception {
    long deadline = System.nanoTime() + timeoutSeconds * 1_000_000_000L;
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try {
        check(bootstrap, brokers, client);
        return;
      } catch (Exception e) {
        last = e;
        Thread.sleep(200);
      }
    }
    System.err.println("cluster not ready: " + last);
    System.exit(1);
  }

  private static void check(String bootstrap, int brokers, Properties client) throws Exception {
    String topic = "__chronolog_ready";
    Properties common = new Properties();
    common.putAll(client);
    common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    common.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    common.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    try (Admin admin = Admin.create(common)) {
      int registered = admin.describeCluster().nodes().get().size();
      if (registered < brokers) throw new IllegalStateException(registered + " of " + brokers + " brokers");
      try {
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) brokers))).all().get();
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) throw e;
      }
    }
    Properties p = new Properties();
    p.putAll(common);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "__chronolog_ready");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(topic, "ready", "ready")).get();
      producer.commitTransaction();
    }
    Properties c = new Properties();
    c.putAll(common);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, "__chronolog_ready");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.commitSync(Map.of(tp, new OffsetAndMetadata(0)), Duration.ofSeconds(10));
    }
  }
}
