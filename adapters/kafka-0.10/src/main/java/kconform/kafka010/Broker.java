package kconform.kafka010;

import java.io.File;
import kafka.cluster.Partition;
import kafka.log.LogManager;
import kafka.server.ReplicaManager;
import kafka.utils.ZkUtils;
import kconform.adapter.BrokerCore;

/**
 * One simulated Kafka 0.10.2 broker: its LogManager over its own log directory, its
 * ReplicaManager (which Partition needs) and the Partition, plus its replica fetcher's
 * state for the partition. A crash drops the objects (memory) and keeps the directory (disk).
 */
final class Broker extends BrokerCore<Cluster.FetchRequestState, Cluster.FetchAnswer> {
    LogManager logManager;
    ReplicaManager replicaManager;
    ZkUtils zkUtils;
    Partition partition;

    /** The leader the fetcher fetches from (with BrokerCore's fetch offset). */
    String fetchLeader;

    Broker(String name, int id, File dir) {
        super(name, id, dir);
    }

    @Override
    public boolean hasPartition() {
        return partition != null;
    }
}
