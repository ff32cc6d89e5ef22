package kconform.kafka010;

import java.util.List;
import kconform.adapter.Line;
import kconform.adapter.StdioServer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The stdio adapter (kconform.adapter.StdioServer) in front of Apache Kafka 0.10.2's own
 * replication code (see Cluster), the hw-truncation generation: the step kinds every line
 * shares, no epoch steps, and no start from a given state.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        Line line = new Line(AppInfoParser.getVersion(), "hw-truncation",
            List.of("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "isr_expiration",
                "deliver_leader_and_isr", "crash", "restart", "elect"),
            false, (config, initial) -> new Cluster(config));
        StdioServer.serve(line, (cluster, kind, s) -> false);
    }
}
