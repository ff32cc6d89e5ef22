package kconform.kafka;

import java.io.File;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import kafka.cluster.Partition;
import org.apache.kafka.metadata.LeaderAndIsr;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogManager;

/**
 * One simulated broker: Kafka's LogManager over its own log directory and Kafka's
 * Partition for the one topic partition, plus what the broker believes (role, leader,
 * epoch) and its replica fetcher's state for the partition. A crash drops the
 * LogManager and Partition (memory) and keeps the directory (disk).
 */
final class Broker {
    /** The controller's decision, as the broker's metadata delta would carry it. */
    record Registration(Integer leader, int leaderEpoch, int partitionEpoch, List<Integer> isr) {
    }

    /** An AlterPartition request from this broker, waiting for the controller. */
    record Proposal(LeaderAndIsr request, CompletableFuture<LeaderAndIsr> answer) {
    }

    final String name;
    final int id;
    final File dir;
    boolean online = true;
    long brokerEpoch;
    long startedMs;
    LogManager logManager;
    Partition partition;
    OffsetCheckpointFile hwCheckpoint;

    String role = "none";
    String leader;
    int leaderEpoch;
    int partitionEpoch;

    /** AbstractFetcherThread's PartitionFetchState for the partition: null = no fetcher. */
    Long fetchOffset;
    boolean truncating;

    /** This follower's fetch parked in its leader's fetch purgatory (DelayedFetch), or null. */
    Cluster.FetchRequestState parked;
    /** The answer to this follower's fetch, on its way back, or null. */
    Cluster.FetchAnswer inFlight;

    final Deque<Registration> inbox = new ArrayDeque<>();
    Proposal proposal;

    /** What an offline broker shows: its disk as it was when it crashed. */
    Snapshot lastSeen;

    Broker(String name, int id, File dir) {
        this.name = name;
        this.id = id;
        this.dir = dir;
    }

    /** The log, leo, hw and cache of a broker that is down (read before it went down). */
    record Snapshot(List<String> log, long logStart, long leo, long hw, List<List<Long>> epochCache) {
    }
}
