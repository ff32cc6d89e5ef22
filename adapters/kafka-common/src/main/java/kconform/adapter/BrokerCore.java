package kconform.adapter;

import java.io.File;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The version-neutral part of one simulated broker: its name and log directory, whether it
 * runs, its fetcher's offset for the partition, and the controller's decisions on their way to
 * it. Each line's Broker adds its Kafka objects (LogManager, Partition) and its in-flight
 * requests, whose types are that Kafka's.
 */
public abstract class BrokerCore<R extends FollowerFetch, A> {
    public final String name;
    public final int id;
    public final File dir;
    public boolean online = true;
    public long startedMs;
    /**
     * Changes at every start: a fetcher session, and the answers to it, belong to one start of
     * the broker. The 2.x/0.10 lines count starts; the 4.4 line registers it as its broker epoch.
     */
    public long session;

    /** The fetcher: null = no fetcher for the partition; else where it fetches from next. */
    public Long fetchOffset;
    /** The fetcher must truncate before it fetches (the lines that have that state). */
    public boolean truncating;

    /** This follower's fetch parked in its leader's fetch purgatory (DelayedFetch), or null. */
    public R parked;
    /** The answer to this follower's fetch, on its way back, or null. */
    public A inFlight;

    /** LeaderAndIsr requests (or metadata) sent and not yet applied, oldest first. */
    public final Deque<Registration> inbox = new ArrayDeque<>();

    /** What this broker shows while it is down. */
    public Snapshot lastSeen;

    protected BrokerCore(String name, int id, File dir) {
        this.name = name;
        this.id = id;
        this.dir = dir;
    }

    /** Where the broker checkpoints its HW (ReplicaManager's replication-offset-checkpoint). */
    public File hwCheckpointFile() {
        return new File(dir, "replication-offset-checkpoint");
    }

    /** The broker runs a Partition for the topic (false while down or before it is created). */
    public abstract boolean hasPartition();
}
