package kconform.kafka;

import java.util.concurrent.ScheduledFuture;
import kconform.adapter.NeverFuture;
import org.apache.kafka.server.util.Scheduler;

/**
 * A scheduler that never runs anything. Kafka's background tasks (log flush, retention,
 * producer-id expiry, asynchronous segment deletion) are not part of the replication
 * protocol kconform checks, and a real thread would make runs non-deterministic. The
 * periodic tasks that are part of it (ISR expiry, the HW checkpoint) are fired by the
 * adapter at the times ReplicaManager would schedule them (see ClusterCore.tick).
 */
final class NoopScheduler implements Scheduler {
    @Override
    public void startup() {
    }

    @Override
    public void shutdown() {
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable fun, long delayMs, long periodMs) {
        return new NeverFuture();
    }

    @Override
    public void resizeThreadPool(int newSize) {
    }
}
