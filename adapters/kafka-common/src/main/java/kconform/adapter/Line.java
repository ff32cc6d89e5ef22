package kconform.adapter;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * One Kafka line behind the stdio protocol, as hello describes it: the Kafka version it runs,
 * its one generation, the step kinds it implements (in hello's order), whether it can start
 * from a given state (protocol 3), and how a reset makes its cluster.
 */
public record Line(String version, String generation, List<String> steps, boolean initialState, Reset reset) {
    /** A reset: a new cluster from the config (and the given state, where initialState). */
    @FunctionalInterface
    public interface Reset {
        ClusterCore<?, ?, ?, ?> start(Map<String, Object> config, Map<String, Object> initial) throws IOException;
    }

    /** The line answers the epoch_query step (and observes its answer). */
    public boolean answersEpochQuery() {
        return steps.contains("epoch_query");
    }
}
