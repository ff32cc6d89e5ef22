package kconform.kafka;

import java.util.List;
import kconform.adapter.Line;
import kconform.adapter.LogDirs;
import kconform.adapter.StdioServer;
import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * The stdio adapter (kconform.adapter.StdioServer) in front of Apache Kafka's own replication
 * code (see Cluster), the diverging-epoch generation. Its own step kind is the controller's answer to
 * an AlterPartition (deliver_alter_partition).
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
            if (!"deliver_alter_partition".equals(kind)) {
                return false;
            }
            ((Cluster) cluster).deliverAlterPartition((String) s.get("replica"));
            return true;
        });
    }
}
