package kconform.kafka;

import org.apache.kafka.common.utils.Time;

/**
 * The clock of the whole simulated cluster. kconform's model has no clock of its own:
 * time moves only on a {@code tick} step, so every Kafka class that reads the time (ISR
 * lag, fetch times, produce deadlines) must read this one. Kafka's own tests use
 * {@code MockTime} for the same reason; that class ships only in Kafka's test jars.
 */
final class ManualTime implements Time {
    /**
     * Where the clock starts: kconform's time 0. Kafka reads a last-caught-up time of 0 as
     * "never" only because real clocks are far from 0 (Replica.resetReplicaState sets 0 for a
     * follower outside the ISR, and ReplicaState.isCaughtUp compares now - 0 with
     * replica.lag.time.max.ms); Kafka's own MockTime starts at the wall-clock time for the
     * same reason.
     */
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

    void set(long nowMs) {
        if (nowMs < ms) {
            throw new IllegalStateException("time cannot go back from " + ms + " to " + nowMs);
        }
        ms = nowMs;
    }
}
