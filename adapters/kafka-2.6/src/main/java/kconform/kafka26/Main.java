package kconform.kafka26;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * kconform's stdio adapter protocol (spec/adapter-protocol.md, version 3) in front of
 * Apache Kafka 2.6's own replication code (see Cluster), the leader-epoch generation. One JSON request per line on stdin,
 * one JSON reply per line on stdout. Kafka's own output is sent to stderr so that stdout
 * carries only the protocol.
 */
public final class Main {
    static final String KAFKA_VERSION = org.apache.kafka.common.utils.AppInfoParser.getVersion();

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
            StandardCharsets.UTF_8);
        System.setOut(System.err);
        ObjectMapper json = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Main handler = new Main();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> request = json.readValue(line, Map.class);
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("seq", request.get("seq"));
            String cmd = String.valueOf(request.get("cmd"));
            try {
                reply.put("ok", true);
                reply.putAll(handler.handle(cmd, request));
            } catch (Exception | AssertionError e) {
                e.printStackTrace(System.err);
                reply.put("ok", false);
                reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            protocol.println(json.writeValueAsString(reply));
            protocol.flush();
            if ("close".equals(cmd)) {
                break;
            }
        }
        handler.closeCluster();
        System.exit(0);
    }

    private Cluster cluster;

    private void closeCluster() {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> handle(String cmd, Map<String, Object> request) throws Exception {
        switch (cmd) {
            case "hello":
                return hello();
            case "reset":
                closeCluster();
                Map<String, Object> config = (Map<String, Object>) request.get("config");
                if (!"leader-epoch".equals(config.get("generation"))) {
                    throw new IllegalArgumentException("Kafka " + KAFKA_VERSION + " runs leader-epoch only (docs/kafka.md), not "
                        + config.get("generation"));
                }
                cluster = new Cluster(config, (Map<String, Object>) request.get("initial"));
                return Map.of();
            case "step":
                if (cluster == null) {
                    throw new IllegalStateException("step before reset");
                }
                Map<String, Object> step = (Map<String, Object>) request.get("step");
                try {
                    step(step);
                } catch (Cluster.Rejected r) {
                    Map<String, Object> rejected = new LinkedHashMap<>();
                    rejected.put("reason", r.getMessage());
                    rejected.put("rule", r.rule);
                    cluster.afterStep();
                    return Map.of("rejected", rejected);
                }
                cluster.afterStep();
                return Map.of("observation", cluster.observe());
            case "close":
                closeCluster();
                return Map.of();
            default:
                throw new IllegalArgumentException("unknown cmd " + cmd);
        }
    }

    @SuppressWarnings("unchecked")
    private void step(Map<String, Object> s) throws Exception {
        String kind = String.valueOf(s.get("kind"));
        switch (kind) {
            case "produce" -> cluster.produce((String) s.get("id"), (List<String>) s.get("values"),
                String.valueOf(s.get("acks")), (String) s.get("to"));
            case "fetch_round" -> cluster.fetchRound((String) s.get("replica"), maxWait(s), maxRecords(s));
            case "fetch" -> cluster.fetch((String) s.get("replica"), maxWait(s), maxRecords(s));
            case "deliver_fetch" -> cluster.deliverFetch((String) s.get("replica"));
            case "tick" -> cluster.tick(((Number) s.get("ms")).longValue());
            case "isr_expiration" -> cluster.isrExpiration((String) s.get("replica"));
            case "epoch_request" -> cluster.epochRequest((String) s.get("replica"));
            case "deliver_epoch" -> cluster.deliverEpoch((String) s.get("replica"));
            case "epoch_round" -> cluster.epochRound((String) s.get("replica"));
            case "deliver_leader_and_isr" -> cluster.deliverLeaderAndIsr((String) s.get("replica"));
            case "crash" -> {
                if (s.get("unflushed_from") != null) {
                    throw new IllegalArgumentException("crash.unflushed_from is not supported");
                }
                cluster.crash((String) s.get("replica"));
            }
            case "restart" -> cluster.restart((String) s.get("replica"));
            case "elect" -> cluster.elect((String) s.get("leader"), (List<String>) s.get("notify"));
            case "epoch_query" -> cluster.epochQuery((String) s.get("replica"), ((Number) s.get("epoch")).intValue(),
                s.get("current_leader_epoch") == null ? null : ((Number) s.get("current_leader_epoch")).intValue());
            default -> throw new IllegalArgumentException("step kind " + kind + " is not supported");
        }
    }

    private static Integer maxRecords(Map<String, Object> s) {
        Object n = s.get("max_records");
        return n == null ? null : ((Number) n).intValue();
    }

    private static Long maxWait(Map<String, Object> s) {
        Object wait = s.get("max_wait_ms");
        return wait == null ? null : ((Number) wait).longValue();
    }

    private static Map<String, Object> hello() {
        Map<String, Object> capabilities = new LinkedHashMap<>();
        capabilities.put("steps", List.of("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "isr_expiration",
            "epoch_request", "deliver_epoch", "epoch_round", "deliver_leader_and_isr", "crash", "restart", "elect", "epoch_query"));
        capabilities.put("fields", List.of("clock_ms", "leader", "leader_epoch", "isr", "partition_epoch",
            "replicas", "producer", "epoch_query"));
        capabilities.put("replica_fields", List.of("online", "role", "leader", "leader_epoch", "leo", "hw",
            "checkpoint_hw", "log", "epoch_cache", "fetch_state", "remote_leo", "log_start"));
        capabilities.put("step_fields", Map.of(
            "fetch_round", List.of("max_wait_ms", "max_records"),
            "fetch", List.of("max_wait_ms", "max_records"),
            "crash", List.of(),
            "produce", List.of("acks", "id", "to"),
            "elect", List.of("leader", "notify"),
            "epoch_query", List.of("current_leader_epoch")));
        capabilities.put("initial_state", true);
        capabilities.put("conventions", Map.of("unknown_remote_leo", "null", "epoch_base", 0));
        Map<String, Object> implementation = new LinkedHashMap<>();
        implementation.put("name", "apache-kafka");
        implementation.put("version", KAFKA_VERSION);
        implementation.put("language", "java");
        implementation.put("generations", List.of("leader-epoch"));
        implementation.put("capabilities", capabilities);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("protocol", 3);
        out.put("implementation", implementation);
        return out;
    }
}
