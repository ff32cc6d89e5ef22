package kconform.kafka010;

import kconform.adapter.ManualClock;
import org.apache.kafka.common.utils.Time;

/** The cluster's manual clock (ManualClock) as Kafka 0.10.2's {@code Time}. */
final class ManualTime extends ManualClock implements Time {
    @Override
    public long hiResClockMs() {
        return milliseconds();
    }
}
