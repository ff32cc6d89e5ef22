package kconform.adapter;

/**
 * What the version-neutral code reads of a follower's fetch as its leader received it: the
 * leader, and the deadline at which a parked fetch (DelayedFetch) completes anyway. Each
 * line's request record carries the rest in its Kafka's types.
 */
public interface FollowerFetch {
    BrokerCore<?, ?> leader();

    long deadlineMs();
}
