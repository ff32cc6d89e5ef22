package kconform.kafka;

import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.server.util.Scheduler;

/**
 * A scheduler that never runs anything. Kafka's background tasks (log flush, retention,
 * producer-id expiry, asynchronous segment deletion) are not part of the replication
 * protocol kconform checks, and a real thread would make runs non-deterministic. The
 * periodic tasks that are part of it (ISR expiry, the HW checkpoint) are fired by the
 * adapter at the times ReplicaManager would schedule them (see Cluster.tick).
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

    /** The handle of a task that never runs. */
    private static final class NeverFuture implements ScheduledFuture<Object> {
        @Override
        public long getDelay(TimeUnit unit) {
            return Long.MAX_VALUE;
        }

        @Override
        public int compareTo(Delayed other) {
            return 0;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return true;
        }

        @Override
        public boolean isCancelled() {
            return true;
        }

        @Override
        public boolean isDone() {
            return true;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }
    }
}
