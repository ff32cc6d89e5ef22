package kconform.kafka26;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import kafka.utils.Scheduler;
import kconform.adapter.NeverFuture;
import scala.Function0;
import scala.runtime.BoxedUnit;

/**
 * The scheduler given to Kafka 2.6's LogManager: it never runs a task. Retention, flush,
 * recovery-point checkpoints and the like are not replication, and the replication tasks
 * (isr-expiration, highwatermark-checkpoint) are run by the adapter on {@code tick}, in
 * the order TICK-1 states.
 */
final class NoopScheduler implements Scheduler {
    @Override
    public void startup() {
    }

    @Override
    public void shutdown() {
    }

    @Override
    public boolean isStarted() {
        return true;
    }

    @Override
    public ScheduledFuture<?> schedule(String name, Function0<BoxedUnit> fun, long delay, long period, TimeUnit unit) {
        return new NeverFuture();
    }
}
