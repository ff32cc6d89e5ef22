package kconform.adapter;

/**
 * The clock of the whole simulated cluster. kconform's model has no clock of its own: time
 * moves only on a {@code tick} step, so every Kafka class that reads the time (ISR lag, fetch
 * times, produce deadlines) must read this one. Kafka's own tests use {@code MockTime} for the
 * same reason; that class ships only in Kafka's test jars. Each line's {@code ManualTime}
 * extends this and implements its Kafka's {@code Time} interface (which changed across lines).
 */
public class ManualClock {
    /**
     * Where the clock starts: kconform's time 0. Kafka reads a last-caught-up time of 0 as
     * "never" only because real clocks are far from 0 (Replica.resetReplicaState sets 0 for a
     * follower outside the ISR, and ReplicaState.isCaughtUp compares now - 0 with
     * replica.lag.time.max.ms); Kafka's own MockTime starts at the wall-clock time for the
     * same reason.
     */
    public static final long ORIGIN_MS = 1_700_000_000_000L;

    private long ms = ORIGIN_MS;

    public long milliseconds() {
        return ms;
    }

    public long nanoseconds() {
        return ms * 1_000_000L;
    }

    public void sleep(long sleepMs) {
        ms += sleepMs;
    }

    /** Moves the clock to {@code nowMs}; time never goes back. */
    public void set(long nowMs) {
        if (nowMs < ms) {
            throw new IllegalStateException("time cannot go back from " + ms + " to " + nowMs);
        }
        ms = nowMs;
    }
}
