package kconform.adapter;

import java.util.List;

/**
 * The controller's decision as a broker receives it: a LeaderAndIsr (ZooKeeper lines) or the
 * metadata delta (KRaft). {@code partitionEpoch} is KRaft's partition epoch, or the
 * partition znode's zkVersion on the ZooKeeper lines (the same job: it fences ISR writes).
 */
public record Registration(Integer leader, int leaderEpoch, int partitionEpoch, List<Integer> isr) {
}
