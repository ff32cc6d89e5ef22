package kconform.kafka010;

import java.io.File;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import kafka.cluster.Partition;
import kafka.log.LogManager;
import kafka.server.ReplicaManager;
import kafka.utils.ZkUtils;

/**
 * One simulated Kafka 0.10.2 broker: its LogManager over its own log directory, its
 * ReplicaManager (which Partition needs) and the Partition, plus its replica fetcher's
 * state for the partition. A crash drops the objects (memory) and keeps the directory (disk).
 */
final class Broker {
    /** A LeaderAndIsr the ZooKeeper controller sends (PartitionState's fields). */
    record Registration(Integer leader, int leaderEpoch, int zkVersion, List<Integer> isr) {
    }

    final String name;
    final int id;
    final File dir;
    boolean online = true;
    int incarnation;
    long startedMs;
    LogManager logManager;
    ReplicaManager replicaManager;
    ZkUtils zkUtils;
    Partition partition;

    /** The fetcher: null = no fetcher for the partition; the leader it fetches from. */
    Long fetchOffset;
    String fetchLeader;

    Cluster.FetchRequestState parked;
    Cluster.FetchAnswer inFlight;

    final Deque<Registration> inbox = new ArrayDeque<>();

    Snapshot lastSeen;

    Broker(String name, int id, File dir) {
        this.name = name;
        this.id = id;
        this.dir = dir;
    }

    /** The log, leo, hw and known leader/epoch of a broker that is down. */
    record Snapshot(List<String> log, long leo, long hw, String leader, int leaderEpoch) {
    }
}
