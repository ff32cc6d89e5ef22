package kconform.adapter;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One replica in an observation (spec/adapter-protocol.md, "replica_fields"); the lines differ in
 * where each value comes from, not in how it is written. {@code remoteLeo} is null unless the
 * replica leads.
 */
public record ReplicaView(boolean online, String role, String leader, int leaderEpoch, long leo, long hw,
                          long checkpointHw, List<String> log, List<?> epochCache, String fetchState,
                          long logStart, Map<String, Object> remoteLeo) {

    /** The observation's map, in the protocol's field order. */
    public Map<String, Object> toMap() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("online", online);
        r.put("role", role);
        r.put("leader", leader);
        r.put("leader_epoch", leaderEpoch);
        r.put("leo", leo);
        r.put("hw", hw); // offline: the HW it had (memory), as the reference shows it
        r.put("checkpoint_hw", checkpointHw);
        r.put("log", log);
        r.put("epoch_cache", epochCache);
        r.put("fetch_state", fetchState);
        r.put("log_start", logStart);
        if (remoteLeo != null) {
            r.put("remote_leo", remoteLeo);
        }
        return r;
    }
}
