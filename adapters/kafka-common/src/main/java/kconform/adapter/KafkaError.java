package kconform.adapter;

/**
 * Kafka answered a request with an error (an ApiException on the Kafka side). The per-line code
 * converts Kafka's exception to this, so the version-neutral bookkeeping can record the
 * protocol's error name without Kafka on its class path.
 */
public final class KafkaError extends Exception {
    /** The protocol's name of the error (Errors.name(), as kconform's fixtures spell it). */
    public final String error;

    public KafkaError(String error) {
        super(error);
        this.error = error;
    }
}
