package kconform.kafka;

import java.util.List;
import kconform.adapter.Line;
import kconform.adapter.LogDirs;
import kconform.adapter.StdioServer;
import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * The stdio adapter (kconform.adapter.StdioServer) in front of Apache Kafka's own replication
 * code (see Cluster), the diverging-epoch generation. Its own step kinds are the controller's answer to
 * an AlterPartition (deliver_alter_partition) and a follower fenced and unfenced by the KRaft
 * controller (heartbeat_lapse).
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        LogDirs.sweepLeftovers(Cluster.DIR_PREFIX);
        Line line = new Line(AppInfoParser.getVersion(), "diverging-epoch",
            List.of("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "isr_expiration",
                "deliver_alter_partition", "deliver_leader_and_isr", "crash", "restart", "elect", "epoch_query",
                "heartbeat_lapse"),
            true, Cluster::new);
        StdioServer.serve(line, (cluster, kind, s) -> {
            switch (kind) {
                case "deliver_alter_partition" -> ((Cluster) cluster).deliverAlterPartition((String) s.get("replica"));
                case "heartbeat_lapse" -> ((Cluster) cluster).heartbeatLapse((String) s.get("replica"));
                default -> {
                    return false;
                }
            }
            return true;
        });
    }
}
