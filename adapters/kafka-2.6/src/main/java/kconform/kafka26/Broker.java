package kconform.kafka26;

import java.io.File;
import kafka.cluster.Partition;
import kafka.log.LogManager;
import kafka.server.checkpoints.OffsetCheckpointFile;
import kconform.adapter.BrokerCore;

/**
 * One simulated Kafka 2.6 broker: its LogManager over its own log directory and its
 * Partition for the one topic partition, plus its replica fetcher's state for the
 * partition (AbstractFetcherThread's PartitionFetchState). A crash drops the LogManager
 * and Partition (memory) and keeps the directory (disk).
 */
final class Broker extends BrokerCore<Cluster.FetchRequestState, Cluster.FetchAnswer> {
    LogManager logManager;
    Partition partition;
    OffsetCheckpointFile hwCheckpoint;

    /** The fetcher's leader and current leader epoch (with BrokerCore's fetch offset). */
    String fetchLeader;
    int fetchEpoch;
    /** The answer to this follower's OffsetsForLeaderEpoch request, on its way back, or null. */
    Cluster.EpochAnswer epochInFlight;

    Broker(String name, int id, File dir) {
        super(name, id, dir);
    }

    @Override
    public boolean hasPartition() {
        return partition != null;
    }
}
