package kconform.kafka26;

import java.util.function.Supplier;
import kconform.adapter.ManualClock;
import org.apache.kafka.common.utils.Time;

/** The cluster's manual clock (ManualClock) as Kafka 2.6's {@code Time}. */
final class ManualTime extends ManualClock implements Time {
    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        if (!condition.get()) {
            throw new IllegalStateException("nothing waits on the manual clock (deadline " + deadlineMs + ")");
        }
    }
}
