package kconform.adapter;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * kconform's stdio adapter protocol (spec/adapter-protocol.md, version 3) in front of one Kafka
 * line's cluster. One JSON request per line on stdin, one JSON reply per line on stdout.
 * Kafka's own output is sent to stderr so that stdout carries only the protocol. The step
 * kinds every line shares are dispatched here; a line's own kinds go to
 * {@link ExtraSteps#step}.
 */
public final class StdioServer {
    /** The step kinds only some lines have (epoch_request, deliver_alter_partition, ...). */
    @FunctionalInterface
    public interface ExtraSteps {
        /** Runs the step; false when the kind is not one of the line's own. */
        boolean step(ClusterCore<?, ?, ?, ?> cluster, String kind, Map<String, Object> step) throws Exception;
    }

    private final Line line;
    private final ExtraSteps extra;
    private ClusterCore<?, ?, ?, ?> cluster;

    private StdioServer(Line line, ExtraSteps extra) {
        this.line = line;
        this.extra = extra;
    }

    /** Serves the protocol on stdin/stdout until close or end of input, then exits the JVM. */
    public static void serve(Line line, ExtraSteps extra) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        ObjectMapper json = new ObjectMapper().disable(SerializationFeature.FAIL_ON_EMPTY_BEANS);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StdioServer handler = new StdioServer(line, extra);
        String text;
        while ((text = in.readLine()) != null) {
            if (text.isBlank()) {
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> request = json.readValue(text, Map.class);
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
                return hello(request);
            case "reset":
                closeCluster();
                Map<String, Object> config = (Map<String, Object>) request.get("config");
                if (!line.generation().equals(config.get("generation"))) {
                    throw new IllegalArgumentException("Kafka " + line.version() + " runs " + line.generation()
                        + " only (docs/kafka.md), not " + config.get("generation"));
                }
                if (!line.initialState() && request.get("initial") != null) {
                    throw new IllegalArgumentException("the Kafka " + line.version()
                        + " adapter cannot start from a given state");
                }
                cluster = line.reset().start(config, (Map<String, Object>) request.get("initial"));
                return Map.of();
            case "step":
                if (cluster == null) {
                    throw new IllegalStateException("step before reset");
                }
                Map<String, Object> step = (Map<String, Object>) request.get("step");
                try {
                    step(step);
                } catch (Rejected r) {
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
        if (!line.steps().contains(kind)) {
            throw new IllegalArgumentException("step kind " + kind + " is not supported");
        }
        switch (kind) {
            case "produce" -> cluster.produce((String) s.get("id"), (List<String>) s.get("values"),
                String.valueOf(s.get("acks")), (String) s.get("to"));
            case "fetch_round" -> cluster.fetchRound((String) s.get("replica"), maxWait(s), maxRecords(s));
            case "fetch" -> cluster.fetch((String) s.get("replica"), maxWait(s), maxRecords(s));
            case "deliver_fetch" -> cluster.deliverFetch((String) s.get("replica"));
            case "tick" -> cluster.tick(((Number) s.get("ms")).longValue());
            case "isr_expiration" -> cluster.isrExpiration((String) s.get("replica"));
            case "deliver_leader_and_isr" -> cluster.deliverLeaderAndIsr((String) s.get("replica"));
            case "crash" -> {
                if (s.get("unflushed_from") != null) {
                    // Not in hello's step_fields, so kconform's runner skips such fixtures; a
                    // fuzzer that draws one anyway gets the line's refusal.
                    cluster.refuseUnflushedCrash();
                }
                cluster.crash((String) s.get("replica"));
            }
            case "restart" -> cluster.restart((String) s.get("replica"));
            case "elect" -> cluster.elect((String) s.get("leader"), (List<String>) s.get("notify"));
            case "epoch_query" -> cluster.epochQuery((String) s.get("replica"), ((Number) s.get("epoch")).intValue(),
                currentLeaderEpoch(s));
            default -> {
                if (!extra.step(cluster, kind, s)) {
                    throw new IllegalArgumentException("step kind " + kind + " is not supported");
                }
            }
        }
    }

    /** epoch_query's current_leader_epoch (null when the step leaves it out). */
    private static Integer currentLeaderEpoch(Map<String, Object> s) {
        Object n = s.get("current_leader_epoch");
        return n == null ? null : ((Number) n).intValue();
    }

    private static Integer maxRecords(Map<String, Object> s) {
        Object n = s.get("max_records");
        return n == null ? null : ((Number) n).intValue();
    }

    private static Long maxWait(Map<String, Object> s) {
        Object wait = s.get("max_wait_ms");
        return wait == null ? null : ((Number) wait).longValue();
    }

    /**
     * The hello reply. Protocol 3, or 4 with the pipelining option when kconform offers it: the loop in
     * {@link #serve} reads one request line at a time and answers each in order, which is all pipelining
     * asks (spec/adapter-protocol.md, "Several requests in flight").
     */
    private Map<String, Object> hello(Map<String, Object> request) {
        Object offered = request.get("options");
        boolean pipelining = Integer.valueOf(4).equals(request.get("protocol"))
            && offered instanceof List && ((List<?>) offered).contains("pipelining");
        boolean epochQuery = line.answersEpochQuery();
        List<String> fields = new java.util.ArrayList<>(List.of("clock_ms", "leader", "leader_epoch", "isr",
            "partition_epoch", "replicas", "producer"));
        Map<String, Object> stepFields = new LinkedHashMap<>();
        stepFields.put("fetch_round", List.of("max_wait_ms", "max_records"));
        stepFields.put("fetch", List.of("max_wait_ms", "max_records"));
        stepFields.put("crash", List.of());
        stepFields.put("produce", List.of("acks", "id", "to"));
        stepFields.put("elect", List.of("leader", "notify"));
        if (epochQuery) {
            fields.add("epoch_query");
            stepFields.put("epoch_query", List.of("current_leader_epoch"));
        }
        Map<String, Object> capabilities = new LinkedHashMap<>();
        capabilities.put("steps", line.steps());
        capabilities.put("fields", fields);
        capabilities.put("replica_fields", List.of("online", "role", "leader", "leader_epoch", "leo", "hw",
            "checkpoint_hw", "log", "epoch_cache", "fetch_state", "remote_leo", "log_start"));
        capabilities.put("step_fields", stepFields);
        capabilities.put("initial_state", line.initialState());
        capabilities.put("conventions", Map.of("unknown_remote_leo", "null", "epoch_base", 0));
        if (pipelining) {
            capabilities.put("pipelining", true);
        }
        Map<String, Object> implementation = new LinkedHashMap<>();
        implementation.put("name", "apache-kafka");
        implementation.put("version", line.version());
        implementation.put("language", "java");
        implementation.put("generations", List.of(line.generation()));
        implementation.put("capabilities", capabilities);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("protocol", pipelining ? 4 : 3);
        out.put("implementation", implementation);
        return out;
    }
}
