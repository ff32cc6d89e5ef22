package kconform.kafka26;

import java.util.List;
import kconform.adapter.Line;
import kconform.adapter.StdioServer;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * The stdio adapter (kconform.adapter.StdioServer) in front of Apache Kafka 2.6's own
 * replication code (see Cluster), the leader-epoch generation. Its own step kinds are the
 * follower's OffsetsForLeaderEpoch exchange (epoch_request, deliver_epoch, epoch_round).
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        Line line = new Line(AppInfoParser.getVersion(), "leader-epoch",
            List.of("produce", "fetch", "deliver_fetch", "fetch_round", "tick", "isr_expiration", "epoch_request",
                "deliver_epoch", "epoch_round", "deliver_leader_and_isr", "crash", "restart", "elect", "epoch_query"),
            true, Cluster::new);
        StdioServer.serve(line, (cluster, kind, s) -> {
            Cluster c = (Cluster) cluster;
            String replica = (String) s.get("replica");
            switch (kind) {
                case "epoch_request" -> c.epochRequest(replica);
                case "deliver_epoch" -> c.deliverEpoch(replica);
                case "epoch_round" -> c.epochRound(replica);
                default -> {
                    return false;
                }
            }
            return true;
        });
    }
}
