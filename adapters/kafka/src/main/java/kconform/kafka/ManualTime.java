package kconform.kafka;

import kconform.adapter.ManualClock;
import org.apache.kafka.common.utils.Time;

/** The cluster's manual clock (ManualClock) as Kafka 4.x's {@code Time}. */
final class ManualTime extends ManualClock implements Time {
}
