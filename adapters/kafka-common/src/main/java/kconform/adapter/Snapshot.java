package kconform.adapter;

import java.util.List;

/**
 * What an offline broker shows: its log, offsets, leader-epoch cache and the leader it knew,
 * read just before it went down (a line that has no such field fills its default).
 */
public record Snapshot(List<String> log, long logStart, long leo, long hw, List<List<Long>> epochCache,
                       String leader, int leaderEpoch) {
}
