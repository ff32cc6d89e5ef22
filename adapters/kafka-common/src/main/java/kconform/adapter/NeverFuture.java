package kconform.adapter;

import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The handle of a task that never runs, for the lines whose Kafka scheduler returns one. The
 * adapters' schedulers run nothing: Kafka's background tasks (log flush, retention, producer-id
 * expiry) are not replication, and the replication tasks (ISR expiry, the HW checkpoint) are
 * fired by ClusterCore.tick at the times ReplicaManager would schedule them.
 */
public final class NeverFuture implements ScheduledFuture<Object> {
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
