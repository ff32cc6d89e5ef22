package kconform.kafka;

import java.io.File;
import java.util.concurrent.CompletableFuture;
import kafka.cluster.Partition;
import kconform.adapter.BrokerCore;
import org.apache.kafka.metadata.LeaderAndIsr;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogManager;

/**
 * One simulated broker: Kafka's LogManager over its own log directory and Kafka's
 * Partition for the one topic partition, plus what the broker believes (role, leader,
 * epoch) and its replica fetcher's state for the partition. A crash drops the
 * LogManager and Partition (memory) and keeps the directory (disk).
 */
final class Broker extends BrokerCore<Cluster.FetchRequestState, Cluster.FetchAnswer> {
    /** An AlterPartition request from this broker, waiting for the controller. */
    record Proposal(LeaderAndIsr request, CompletableFuture<LeaderAndIsr> answer) {
    }

    LogManager logManager;
    Partition partition;
    OffsetCheckpointFile hwCheckpoint;

    String role = "none";
    String leader;
    int leaderEpoch;
    int partitionEpoch;

    Proposal proposal;

    Broker(String name, int id, File dir) {
        super(name, id, dir);
    }

    @Override
    public boolean hasPartition() {
        return partition != null;
    }
}
