package kconform.kafka26;

import java.io.File;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import kafka.cluster.Partition;
import kafka.log.LogManager;
import kafka.server.checkpoints.OffsetCheckpointFile;

/**
 * One simulated Kafka 2.6 broker: its LogManager over its own log directory and its
 * Partition for the one topic partition, plus its replica fetcher's state for the
 * partition (AbstractFetcherThread's PartitionFetchState). A crash drops the LogManager
 * and Partition (memory) and keeps the directory (disk).
 */
final class Broker {
    /** A LeaderAndIsr the ZooKeeper controller sends (LeaderAndIsrPartitionState's fields). */
    record Registration(Integer leader, int leaderEpoch, int zkVersion, List<Integer> isr) {
    }

    final String name;
    final int id;
    final File dir;
    boolean online = true;
    /** Counts starts: a fetcher session (and the answers to it) belongs to one incarnation. */
    int incarnation;
    long startedMs;
    LogManager logManager;
    Partition partition;
    OffsetCheckpointFile hwCheckpoint;

    /** The fetcher: null = no fetcher for the partition; its leader and current leader epoch. */
    Long fetchOffset;
    boolean truncating;
    String fetchLeader;
    int fetchEpoch;

    /** This follower's fetch parked in its leader's fetch purgatory (DelayedFetch), or null. */
    Cluster.FetchRequestState parked;
    /** The answer to this follower's fetch, on its way back, or null. */
    Cluster.FetchAnswer inFlight;
    /** The answer to this follower's OffsetsForLeaderEpoch request, on its way back, or null. */
    Cluster.EpochAnswer epochInFlight;

    final Deque<Registration> inbox = new ArrayDeque<>();

    /** What an offline broker shows: its disk and memory as they were when it crashed. */
    Snapshot lastSeen;

    Broker(String name, int id, File dir) {
        this.name = name;
        this.id = id;
        this.dir = dir;
    }

    /** The log, leo, hw, cache and known leader/epoch of a broker that is down. */
    record Snapshot(List<String> log, long logStart, long leo, long hw, List<List<Long>> epochCache,
                    String leader, int leaderEpoch) {
    }
}
