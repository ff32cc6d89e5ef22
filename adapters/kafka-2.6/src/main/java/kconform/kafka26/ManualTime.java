package kconform.kafka26;

import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;

/**
 * The clock of the whole simulated cluster: it moves only on a kconform {@code tick}, so
 * every Kafka 2.6 class that reads the time (ISR lag, fetch times, produce deadlines)
 * reads this one, as Kafka's own tests use {@code MockTime} (a test-jar class). It starts
 * at a wall-clock origin because Kafka reads a last-caught-up time of 0 as "never".
 */
final class ManualTime implements Time {
    static final long ORIGIN_MS = 1_700_000_000_000L;

    private long ms = ORIGIN_MS;

    @Override
    public long milliseconds() {
        return ms;
    }

    @Override
    public long nanoseconds() {
        return ms * 1_000_000L;
    }

    @Override
    public void sleep(long sleepMs) {
        ms += sleepMs;
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        if (!condition.get()) {
            throw new IllegalStateException("nothing waits on the manual clock (deadline " + deadlineMs + ")");
        }
    }

    void set(long nowMs) {
        if (nowMs < ms) {
            throw new IllegalStateException("time cannot go back from " + ms + " to " + nowMs);
        }
        ms = nowMs;
    }
}
