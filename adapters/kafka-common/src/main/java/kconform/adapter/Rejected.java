package kconform.adapter;

/** A refused step: the precondition of a spec rule does not hold (the reply's "rejected"). */
public final class Rejected extends Exception {
    /** The spec rule whose precondition failed (spec/replication.md). */
    public final String rule;

    public Rejected(String rule, String reason) {
        super(reason);
        this.rule = rule;
    }
}
