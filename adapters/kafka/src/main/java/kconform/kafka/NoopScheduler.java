package kconform.kafka;

import java.util.concurrent.ScheduledFuture;
import kconform.adapter.NeverFuture;
import org.apache.kafka.server.util.Scheduler;

/**
 * A scheduler that runs nothing but the leader-epoch cache's one-off flushes (below). Kafka's background tasks (log flush, retention,
 * producer-id expiry, asynchronous segment deletion) are not part of the replication
 * protocol kconform checks, and a real thread would make runs non-deterministic. The
 * periodic tasks that are part of it (ISR expiry, the HW and log-start checkpoints) are fired by the
 * adapter at the times ReplicaManager would schedule them (see ClusterCore.tick).
 */
final class NoopScheduler implements Scheduler {
    /** The name prefix of LeaderEpochFileCache's one-off checkpoint flushes. */
    static final String EPOCH_CACHE_FLUSH = "leader-epoch-cache-flush-";

    @Override
    public void startup() {
    }

    @Override
    public void shutdown() {
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable fun, long delayMs, long periodMs) {
        if (name.startsWith(EPOCH_CACHE_FLUSH) && delayMs == 0 && periodMs < 0) {
            // LeaderEpochFileCache.truncateFrom{Start,End}AsyncFlush: a one-off flush Kafka's
            // scheduler runs at once. Run here and now, so that leader-epoch-checkpoint follows
            // the cache as the spec says (EPOCH-CACHE-4, LOG-START-5) and as 2.6, which
            // flushed inside the call, did; left undone, a crash would restore entries Kafka
            // had already written away.
            fun.run();
        }
        return new NeverFuture();
    }

    @Override
    public void resizeThreadPool(int newSize) {
    }
}
