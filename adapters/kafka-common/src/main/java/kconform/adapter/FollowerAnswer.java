package kconform.adapter;

/** What the version-neutral code reads of a leader's answer to a fetch: the request it answers. */
public interface FollowerAnswer<R extends FollowerFetch> {
    R request();
}
