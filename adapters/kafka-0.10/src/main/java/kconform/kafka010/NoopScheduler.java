package kconform.kafka010;

import java.util.concurrent.TimeUnit;
import kafka.utils.Scheduler;
import scala.Function0;
import scala.runtime.BoxedUnit;

/**
 * The scheduler given to Kafka 0.10.2's LogManager: it never runs a task. Retention, flush
 * and recovery-point checkpoints are not replication; the replication tasks (isr-expiration,
 * highwatermark-checkpoint) are run by the adapter on {@code tick}, in the order TICK-1 states.
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
    public void schedule(String name, Function0<BoxedUnit> fun, long delay, long period, TimeUnit unit) {
    }

    @Override
    public long schedule$default$3() {
        return 0L;
    }

    @Override
    public long schedule$default$4() {
        return -1L;
    }

    @Override
    public TimeUnit schedule$default$5() {
        return TimeUnit.MILLISECONDS;
    }
}
