package kconform.adapter;

/**
 * What the version-neutral code reads of a follower's fetch as its leader received it: the
 * leader, the follower's session, and the deadline at which a parked fetch (DelayedFetch) completes anyway. Each
 * line's request record carries the rest in its Kafka's types.
 */
public interface FollowerFetch {
    BrokerCore<?, ?> leader();

    /** The follower's session (BrokerCore.session) when it sent the request. */
    long session();

    long deadlineMs();
}
