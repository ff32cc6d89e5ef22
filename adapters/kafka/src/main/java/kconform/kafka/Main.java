package kconform.kafka;

import java.util.List;
import kconform.adapter.Line;
import kconform.adapter.LogDirs;
import kconform.adapter.StdioServer;
import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * The stdio adapter (kconform.adapter.StdioServer) in front of Apache Kafka's own replication
 * code (see Cluster), the diverging-epoch generation. Its own step kinds are the controller's
 * answer to an AlterPartition and the epoch query.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        LogDirs.sweepLeftovers(Cluster.DIR_PREFIX);
        Line line = new Line(AppInfoParser.getVersion(), "diverging-epoch",
            List.of("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "isr_expiration",
                "deliver_alter_partition", "deliver_leader_and_isr", "crash", "restart", "elect", "epoch_query"),
            true, Cluster::new);
        StdioServer.serve(line, (cluster, kind, s) -> {
            Cluster c = (Cluster) cluster;
            String replica = (String) s.get("replica");
            switch (kind) {
                case "deliver_alter_partition" -> c.deliverAlterPartition(replica);
                case "epoch_query" -> c.epochQuery(replica, ((Number) s.get("epoch")).intValue(),
                    StdioServer.currentLeaderEpoch(s));
                default -> {
                    return false;
                }
            }
            return true;
        });
    }
}
