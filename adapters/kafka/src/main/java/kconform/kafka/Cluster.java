package kconform.kafka;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import kconform.adapter.ClusterCore;
import kconform.adapter.FollowerAnswer;
import kconform.adapter.FollowerFetch;
import kconform.adapter.KafkaError;
import kconform.adapter.Registration;
import kconform.adapter.Rejected;
import kconform.adapter.ReplicaView;
import kconform.adapter.Snapshot;
import kafka.cluster.DelayedOperations;
import kafka.cluster.Partition;
import org.apache.kafka.common.DirectoryId;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.ConfigRepository;
import org.apache.kafka.metadata.LeaderAndIsr;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.MetadataCache;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.Replicas;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.partition.AlterPartitionListener;
import org.apache.kafka.server.partition.AlterPartitionManager;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.FetchParams;
import org.apache.kafka.server.util.FileLock;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpoints;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.CleanerConfig;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogManager;
import org.apache.kafka.storage.internals.log.LogReadInfo;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;
import scala.Option;
import scala.Tuple2;

/**
 * One partition replicated on a few simulated brokers, each running Kafka's own
 * Partition over a real UnifiedLog, driven one kconform step at a time.
 *
 * What runs Kafka's code: the leader's append (Partition.appendRecordsToLeader), its
 * answer to a follower's fetch (Partition.fetchRecords, which updates the follower's
 * state, expands the ISR and moves the HW), the follower's append and HW update
 * (appendRecordsToFollowerOrFutureReplica, UnifiedLog.maybeUpdateHighWatermark),
 * truncation (Partition.truncateTo, UnifiedLog.endOffsetForEpoch), ISR expiry
 * (maybeShrinkIsr), AlterPartition proposals and their answers
 * (handleAlterPartitionUpdate / handleAlterPartitionError), leader and follower
 * transitions (makeLeader / makeFollower), acks=all completion
 * (checkEnoughReplicasReachOffset), OffsetsForLeaderEpoch (lastOffsetForLeaderEpoch),
 * log recovery on restart (LogManager.startup) and the HW read back from the
 * replication-offset-checkpoint file (Partition.createLogIfNotExists).
 *
 * What the adapter decides itself (docs/kafka.md, "not under test"): the controller's
 * choices, when the fetcher thread runs (one fetch per step), the order of the periodic
 * tasks on a tick, and the follower-side steps of AbstractFetcherThread, written after
 * processFetchRequest / truncateOnFetchResponse / fetchOffsetAndTruncate.
 */
final class Cluster extends ClusterCore<Broker, Cluster.FetchRequestState, Cluster.FetchAnswer, ManualTime> {
    static final String TOPIC = "kconform";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);
    static final Uuid TOPIC_ID = new Uuid(0x6b636f6e666f726dL, 0x6b61666b61303031L);
    private static final int MAX_BYTES = 1 << 20;

    /** Brokers fenced by the controller while running (heartbeat_lapse), for the length of the step. */
    private final Set<Integer> fenced = new TreeSet<>();

    /** A follower's fetch as the leader received it (FetchParams + PartitionData). */
    record FetchRequestState(Broker follower, Broker leader, long session, int requestEpoch,
                             FetchParams params, FetchRequest.PartitionData data, long deadlineMs,
                             Integer maxRecords) implements FollowerFetch {
    }

    /** The leader's answer: an error, or what Partition.fetchRecords read. */
    record FetchAnswer(FetchRequestState request, Errors error, LogReadInfo read, MemoryRecords records) implements FollowerAnswer<FetchRequestState> {
    }

    Cluster(Map<String, Object> config) throws IOException {
        this(config, null);
    }

    /** A fresh partition, or (protocol 3) the given state of spec/adapter-protocol.md "reset". */
    Cluster(Map<String, Object> config, Map<String, Object> initial) throws IOException {
        super(config, new ManualTime(), DIR_PREFIX + ProcessHandle.current().pid() + "-", Broker::new);
        begin(config, initial);
    }

    /**
     * Builds a given state as Kafka's own unit tests do (PartitionTest, AbstractFetcherThreadTest):
     * each broker's log appended as follower batches (one per run of records of one epoch) from
     * its log start, the leader-epoch cache set to the given entries, the HW and its checkpoint
     * written, then makeLeader / makeFollower with the partition state the broker knows; a
     * leader's view of a follower is set through Replica.updateFetchStateOrThrow at time 0.
     */
    @SuppressWarnings("unchecked")
    @Override
    protected void fromGiven(Map<String, Object> initial) throws IOException {
        Map<String, Map<String, Object>> given = (Map<String, Map<String, Object>>) initial.get("replicas");
        for (Broker b : brokers) {
            Map<String, Object> rs = given.get(b.name);
            start(b, true);
            UnifiedLog log = b.partition.localLogOrException();
            long logStart = ((Number) rs.get("log_start")).longValue();
            if (logStart > 0) {
                log.truncateFullyAndStartAt(logStart, Optional.empty());
            }
            List<String> records = (List<String>) rs.get("log");
            long offset = logStart;
            int i = 0;
            while (i < records.size()) {
                // One record per batch: a given follower log may end inside what would be one of
                // the leader's batches, and Kafka replicates whole batches.
                int epoch = epochOf(records.get(i));
                List<SimpleRecord> batch = new ArrayList<>();
                String r = records.get(i);
                batch.add(new SimpleRecord(valueOf(r)));
                i++;
                log.appendAsFollower(MemoryRecords.withRecords(offset, Compression.NONE, epoch,
                    batch.toArray(SimpleRecord[]::new)), Integer.MAX_VALUE);
                offset += batch.size();
            }
            List<EpochEntry> cache = new ArrayList<>();
            for (List<Number> e : (List<List<Number>>) rs.get("epoch_cache")) {
                cache.add(new EpochEntry(e.get(0).intValue(), e.get(1).longValue()));
            }
            log.leaderEpochCache().clear();
            log.leaderEpochCache().assign(cache);
            b.hwCheckpoint.write(Map.of(TP, ((Number) rs.get("checkpoint_hw")).longValue()));
            log.updateHighWatermark(((Number) rs.get("hw")).longValue());
            String knownLeader = (String) rs.get("leader");
            int knownEpoch = ((Number) rs.get("leader_epoch")).intValue();
            b.leaderEpoch = -1;
            b.partitionEpoch = -1;
            apply(b, new Registration(knownLeader == null ? null : broker(knownLeader).id, knownEpoch,
                ctrlPartitionEpoch, List.copyOf(ctrlIsr)), false);
            if ("follower".equals(b.role)) {
                b.fetchOffset = log.logEndOffset();
                b.truncating = "truncating".equals(rs.get("fetch_state"));
            }
            // makeLeader may have moved the HW (an ISR of one); the given state says where it is.
            log.updateHighWatermark(((Number) rs.get("hw")).longValue());
            if ("leader".equals(b.role)) {
                // makeLeader took the LEO as the start of the leader's epoch; the given cache says
                // where the epoch started (the leader has led since then): ISR joins need it.
                for (EpochEntry e : cache) {
                    if (e.epoch() == knownEpoch) {
                        b.partition.leaderEpochStartOffsetOpt_$eq(Option.apply((Object) e.startOffset()));
                    }
                }
            }
        }
        // The leader's view of its followers, once every broker has started: the fetch it stands
        // for carries the follower's broker epoch, which a broker gets when it starts (before,
        // a follower listed after its leader had none, so it was not ISR-eligible, KIP-903).
        for (Broker b : brokers) {
            if ("leader".equals(b.role)) {
                givenFollowerViews(b, given.get(b.name), (f, leo, caughtUpMs) -> givenFollowerView(b, f, leo, caughtUpMs));
            }
        }
    }

    /**
     * A given leader's view of follower f, built as fetches would build it: makeLeader left it
     * unknown (Replica.resetReplicaState of a new leader: no LEO, no previous fetch, no broker
     * epoch; caught up now if an ISR member, else never). A given LEO is a fetch at it now
     * (updateFetchStateOrThrow at the leader's LEO: the previous fetch is at that LEO, now); a
     * given caught-up time below the leader's LEO is a fetch at that time reaching the follower's
     * own LEO first. Kafka 4.4 has no other way to set lastCaughtUpTimeMs (it only grows, and a
     * fetch at the leader's LEO makes the follower caught up now), so a given state it cannot
     * reach this way is refused, naming the field.
     */
    private void givenFollowerView(Broker leader, Broker f, Long leo, Long caughtUpMs) {
        org.apache.kafka.server.replica.Replica replica = leader.partition.getReplica(f.id).get();
        long leaderLeo = leader.partition.localLogOrException().logEndOffset();
        long now = time.milliseconds();
        if (leo != null) {
            if (caughtUpMs != null && leo < leaderLeo) {
                replica.updateFetchStateOrThrow(new org.apache.kafka.storage.internals.log.LogOffsetMetadata(leo),
                    0L, caughtUpMs, leo, f.session);
            }
            replica.updateFetchStateOrThrow(new org.apache.kafka.storage.internals.log.LogOffsetMetadata(leo),
                0L, now, leaderLeo, f.session);
        }
        long built = replica.stateSnapshot().lastCaughtUpTimeMs();
        long wanted = caughtUpMs == null ? 0L : caughtUpMs;
        if (built != wanted) {
            throw new IllegalArgumentException("initial.replicas." + leader.name + ".last_caught_up_ms." + f.name
                + ": Kafka 4.4's leader cannot be given this view of " + f.name + " (remote LEO " + leo
                + ", leader LEO " + leaderLeo + "): its Replica's last caught-up time is set only by"
                + " makeLeader (now for an ISR member, never for the others) and by fetches, which make a"
                + " follower at the leader's LEO caught up now");
        }
    }

    // ------------------------------------------------------------------ broker life

    @Override
    protected void startKafka(Broker b, boolean isNew) throws IOException {
        if (!isNew) {
            b.leaderEpoch = -1; // a restarted broker knows no leader epoch until the controller says
            b.partitionEpoch = -1;
        }
        b.role = "none";
        Properties props = new Properties();
        props.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(minIsr));
        props.put(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, Boolean.toString(unclean));
        LogConfig logConfig = new LogConfig(props);
        ConfigRepository configs = Defaults.proxy(ConfigRepository.class,
            (method, args) -> method.equals("config") || method.equals("topicConfig")
                ? Optional.of((Object) props.clone()) : Optional.empty());
        b.logManager = new LogManager(List.of(b.dir), List.of(), configs, logConfig, new CleanerConfig(false),
            1, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, 900_000,
            new ProducerStateManagerConfig(86_400_000, false), 600_000, new NoopScheduler(),
            new BrokerTopicStats(), new LogDirFailureChannel(1), time, false, 0L,
            (cfg, dirs, logs, channel, clock) -> null);
        try {
            b.logManager.startup(Set.of());
        } catch (Exception e) {
            throw new IOException("LogManager.startup failed for broker " + b.name + ": " + e, e);
        }
        b.hwCheckpoint = new OffsetCheckpointFile(b.hwCheckpointFile(), null);
        b.partition = new Partition(TP, lagMs, b.id, () -> (Object) b.session, time,
            listener(), delayedOperations(), metadataCache(), b.logManager, alterPartitionManager(b),
            Option.apply(TOPIC_ID));
        b.partition.createLogIfNotExists(isNew, false, offsetCheckpoints(b), Option.apply(TOPIC_ID), Option.empty());
    }

    @Override
    protected void stop(Broker b) {
        b.lastSeen = snapshot(b);
        UnifiedLog log = b.partition.log().isDefined() ? b.partition.log().get() : null;
        if (log != null) {
            log.closeQuietly(); // no clean-shutdown marker: the next start recovers the log
        }
        for (FileLock lock : b.logManager.dirLocks()) {
            try {
                lock.destroy();
            } catch (IOException e) {
                throw new IllegalStateException("cannot release the lock of " + b.dir + ": " + e, e);
            }
        }
        b.online = false;
        b.role = "none"; // a dead broker leads nothing; it keeps the leader and epoch it knew
        b.partition = null;
        b.logManager = null;
        b.proposal = null;
        b.inbox.clear();
        b.fetchOffset = null;
        b.parked = null;
        b.inFlight = null;
    }

    static final String DIR_PREFIX = "kconform-kafka-";

    // ------------------------------------------------------------------ Kafka's collaborators

    private static AlterPartitionListener listener() {
        return new AlterPartitionListener() {
            @Override
            public void markIsrExpand() {
            }

            @Override
            public void markIsrShrink() {
            }

            @Override
            public void markFailed() {
            }
        };
    }

    /** Purgatories are the adapter's (pending produces; no parked fetches). */
    private static DelayedOperations delayedOperations() {
        return new DelayedOperations(Option.apply(TOPIC_ID), TP, null, null, null, null) {
            @Override
            public void checkAndCompleteAll() {
            }

            @Override
            public int numDelayedDelete() {
                return 0;
            }
        };
    }

    /** What KRaft's metadata says about brokers: alive and unfenced unless the controller
     * has handled its failure; its epoch is the one it registered with (KIP-903). */
    private MetadataCache metadataCache() {
        return Defaults.proxy(MetadataCache.class, (method, args) -> switch (method) {
            case "hasAliveBroker" -> Optional.of(aliveInMetadata((Integer) args[0]));
            case "isBrokerFenced" -> Optional.of(!aliveInMetadata((Integer) args[0]));
            case "isBrokerShuttingDown" -> Optional.of(false);
            case "getAliveBrokerEpoch" -> Optional.of(aliveInMetadata((Integer) args[0])
                ? Optional.of(brokers.get((Integer) args[0]).session) : Optional.empty());
            case "metadataVersion" -> Optional.of(MetadataVersion.latestProduction());
            default -> Optional.empty();
        });
    }

    /** Alive and unfenced in the metadata: not a failure the controller handled, and not fenced
     * now (heartbeat_lapse). KRaftMetadataCache reads all three answers from the registration's
     * fenced flag: hasAliveBroker and getAliveBrokerEpoch skip a fenced broker, isBrokerFenced
     * says so. */
    private boolean aliveInMetadata(int id) {
        return id >= 0 && id < brokers.size() && !down.contains(id) && !fenced.contains(id);
    }

    private AlterPartitionManager alterPartitionManager(Broker b) {
        return new AlterPartitionManager() {
            @Override
            public void start() {
            }

            @Override
            public void shutdown() {
            }

            @Override
            public CompletableFuture<LeaderAndIsr> submit(org.apache.kafka.server.common.TopicIdPartition tip,
                                                          LeaderAndIsr request) {
                CompletableFuture<LeaderAndIsr> answer = new CompletableFuture<>();
                if (b.proposal != null) {
                    // DefaultAlterPartitionManager keeps one request per partition until its answer:
                    // a second one is not attempted (Partition resets to the committed state).
                    answer.completeExceptionally(new org.apache.kafka.common.errors.OperationNotAttemptedException(
                        "an AlterPartition request of " + b.name + " is still in flight"));
                    return answer;
                }
                b.proposal = new Broker.Proposal(request, answer);
                return answer;
            }
        };
    }

    private OffsetCheckpoints offsetCheckpoints(Broker b) {
        return (dir, tp) -> Optional.ofNullable(b.hwCheckpoint.read().get(tp));
    }

    // ------------------------------------------------------------------ controller

    private PartitionRegistration toKafka(Registration r) {
        int[] replicas = brokers.stream().mapToInt(x -> x.id).toArray();
        return new PartitionRegistration.Builder()
            .setReplicas(replicas)
            .setDirectories(DirectoryId.unassignedArray(replicas.length))
            .setIsr(r.isr().stream().mapToInt(Integer::intValue).toArray())
            .setLeader(r.leader() == null ? LeaderAndIsr.NO_LEADER : r.leader())
            .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED)
            .setLeaderEpoch(r.leaderEpoch())
            .setPartitionEpoch(r.partitionEpoch())
            .setElr(new int[0])
            .setLastKnownElr(new int[0])
            .setAddingReplicas(new int[0])
            .setRemovingReplicas(new int[0])
            .build();
    }

    /**
     * The broker applies the controller's record, as ReplicaManager.applyLocalLeadersDelta /
     * applyLocalFollowersDelta do: makeLeader or makeFollower, then (follower) a new fetcher
     * at initialFetchOffset when the leader epoch is new.
     */
    @Override
    protected void apply(Broker b, Registration r, boolean isNew) {
        if (!b.online) {
            return;
        }
        if (r.leaderEpoch() < b.leaderEpoch
            || (r.leaderEpoch() == b.leaderEpoch && r.partitionEpoch() <= b.partitionEpoch && !isNew)) {
            return; // LAI-1: not newer than what the broker knows
        }
        boolean newEpoch = isNew || r.leaderEpoch() != b.leaderEpoch;
        if (newEpoch) {
            b.proposal = null; // ISR-ALTER-4: a new leader epoch forgets the proposal
            b.inFlight = null; // MSG-DROP-1: the fetcher session ends with the epoch
            b.parked = null;
        }
        PartitionRegistration reg = toKafka(r);
        if (r.leader() != null && r.leader() == b.id) {
            b.partition.makeLeader(reg, isNew, offsetCheckpoints(b), Option.apply(TOPIC_ID), Option.empty());
            b.role = "leader";
            b.fetchOffset = null;
        } else {
            b.partition.makeFollower(reg, isNew, offsetCheckpoints(b), Option.apply(TOPIC_ID), Option.empty());
            if (r.leader() == null) {
                b.role = "none";
                b.fetchOffset = null;
            } else {
                b.role = "follower";
                if (newEpoch || b.fetchOffset == null) {
                    UnifiedLog log = b.partition.localLogOrException();
                    // ReplicaManager.initialFetchOffset: LEO when the log has an epoch (truncation
                    // on fetch), else the HW, truncating first (AbstractFetcherThread.addPartitions).
                    boolean hasEpoch = log.latestEpoch().isPresent();
                    b.fetchOffset = hasEpoch ? log.logEndOffset() : log.highWatermark();
                    b.truncating = !hasEpoch;
                }
            }
        }
        b.leader = r.leader() == null ? null : brokers.get(r.leader()).name;
        b.leaderEpoch = r.leaderEpoch();
        b.partitionEpoch = r.partitionEpoch();
        completePendingAt(b);
    }

    @Override
    public void deliverLeaderAndIsr(String name) throws Rejected {
        Broker b = broker(name);
        if (b.inbox.isEmpty()) {
            throw new Rejected("LAI-PRE-1", "deliver_leader_and_isr: none is in flight to " + name);
        }
        Registration r = b.inbox.poll();
        apply(b, r, false);
        // The ISR-only records written after it at the same leader epoch reach the broker
        // with it: they are metadata, not a LeaderAndIsr of their own (CTRL-ELECT-5).
        while (!b.inbox.isEmpty() && b.inbox.peek().leaderEpoch() == r.leaderEpoch()) {
            apply(b, b.inbox.poll(), false);
        }
    }

    /** The controller answers the leader's AlterPartition (ReplicationControlManager.alterPartition
     * validation, as the adapter's controller decides it); Kafka's Partition handles the answer. */
    void deliverAlterPartition(String name) throws Rejected {
        Broker b = broker(name);
        if (b.proposal == null) {
            throw new Rejected("ISR-ALTER-PRE-1", "deliver_alter_partition: no ISR proposal of " + name + " is in flight");
        }
        Broker.Proposal p = b.proposal;
        b.proposal = null;
        LeaderAndIsr req = p.request();
        List<Integer> proposed = new ArrayList<>(new TreeSet<>(req.isr()));
        Errors error = Errors.NONE;
        if (req.leaderEpoch() < ctrlEpoch) {
            error = Errors.FENCED_LEADER_EPOCH;
        } else if (req.partitionEpoch() < ctrlPartitionEpoch) {
            error = Errors.INVALID_UPDATE_VERSION;
        } else if (proposed.stream().anyMatch(id -> !ctrlIsr.contains(id) && down.contains(id))) {
            error = Errors.INELIGIBLE_REPLICA;
        }
        if (error != Errors.NONE) {
            p.answer().completeExceptionally(error.exception());
            // Partition.handleAlterPartitionError keeps the change pending until new metadata
            // arrives. At the same leader epoch that metadata is the ISR-only record the broker
            // already applied: re-apply it. A new leader epoch comes with its own LeaderAndIsr.
            // INELIGIBLE_REPLICA is Kafka's own reset to the committed state, with no HW step
            // (the handler returns false): nothing to re-apply (replay s20-18369: re-applied,
            // makeLeader's maybeIncrementLeaderHW moved an HW Kafka leaves until the next fetch
            // or append).
            if (ctrlEpoch == b.leaderEpoch && error != Errors.INELIGIBLE_REPLICA) {
                b.partitionEpoch = -1;
                apply(b, registration(), false);
            }
            return;
        }
        ctrlIsr = proposed;
        ctrlPartitionEpoch += 1;
        b.partitionEpoch = ctrlPartitionEpoch; // the answer carries the new record to the leader
        p.answer().complete(new LeaderAndIsr(req.leader(), req.leaderEpoch(), proposed,
            LeaderRecoveryState.RECOVERED, ctrlPartitionEpoch));
        sendInOrder(b);
    }

    /**
     * heartbeat_lapse (CTRL-FENCE-1): a live follower's heartbeats lapse, the controller fences it,
     * and it is unfenced at its next heartbeat.
     *
     * The fencing is ReplicationControlManager.handleBrokerFenced: for a partition whose ISR holds
     * the broker, KRaft's own PartitionChangeBuilder computes the change (target ISR without it,
     * the broker not an acceptable leader; no leader-epoch bump on a shrink at this metadata
     * version, KAFKA-15021; without ELR an ISR never becomes empty) and the record is merged into
     * the registration (PartitionRegistration.merge). The record reaches the live brokers as
     * metadata while the broker is fenced in their MetadataCache, so the leader's makeLeader ->
     * maybeIncrementLeaderHW skips it (Partition.isReplicaIsrEligible, KIP-841) and waiting
     * produces are checked then. The unfencing (handleBrokerUnfenced) writes the registration
     * change and elects only in leaderless partitions.
     *
     * The adapter's part: elections happen at elect, as for restart (whose unfencing would elect in
     * KRaft too): a leaderless partition stays leaderless here, so the builder accepts no new leader
     * then (docs/kafka.md).
     */
    void heartbeatLapse(String name) throws Rejected {
        Broker b = broker(name);
        if (!b.online) {
            throw new Rejected("CTRL-FENCE-PRE-1", "heartbeat_lapse: replica " + name + " is offline");
        }
        if (ctrlLeader != null && ctrlLeader == b.id) {
            throw new Rejected("CTRL-FENCE-PRE-1", "heartbeat_lapse: " + name + " leads; fencing a live"
                + " leader elects another while it still runs, which is not modelled (write crash, then elect)");
        }
        fenced.add(b.id);
        try {
            if (ctrlIsr.contains(b.id)) { // BrokersToIsrs.partitionsWithBrokerInIsr
                PartitionRegistration now = toKafka(registration());
                Integer leader = ctrlLeader;
                PartitionChangeBuilder builder = new PartitionChangeBuilder(now, TOPIC_ID, TP.partition(),
                    r -> leader != null && r != b.id && aliveInMetadata(r),
                    MetadataVersion.latestProduction(), minIsr, false)
                    .setElection(unclean ? PartitionChangeBuilder.Election.UNCLEAN : PartitionChangeBuilder.Election.ONLINE)
                    .setTargetIsr(Replicas.toList(Replicas.copyWithout(now.isr, b.id)))
                    .setDefaultDirProvider(id -> DirectoryId.UNASSIGNED);
                Optional<ApiMessageAndVersion> change = builder.build();
                if (change.isPresent()) {
                    PartitionRegistration next = now.merge((PartitionChangeRecord) change.get().message());
                    boolean newLeaderEpoch = next.leaderEpoch != ctrlEpoch;
                    ctrlLeader = next.leader == LeaderAndIsr.NO_LEADER ? null : next.leader;
                    ctrlEpoch = next.leaderEpoch;
                    ctrlPartitionEpoch = next.partitionEpoch;
                    ctrlIsr = new ArrayList<>(Replicas.toList(next.isr));
                    publish(newLeaderEpoch, null);
                }
            }
            completeAllPending(); // DelayedProduce: the HW the leader moved while the broker was fenced
        } finally {
            fenced.remove(b.id); // handleBrokerUnfenced at its next heartbeat
        }
    }

    // ------------------------------------------------------------------ steps

    /**
     * The follower's fetcher thread sends one fetch (AbstractFetcherThread.doWork: maybeTruncate
     * first if the partition is truncating, then the request built as buildFetch does), and the
     * leader handles it: Partition.fetchRecords (which updates the follower's state, the ISR and
     * the HW), answered at once or parked as ReplicaManager.fetchMessages decides.
     */
    @Override
    public void fetch(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        Broker f = broker(name);
        Broker l = followedLeader(f, "FETCH-PRE-1");
        refuseOutstandingFetch(f);
        UnifiedLog log = f.partition.localLogOrException();
        if (!f.truncating) {
            maxBytesFor(l, f.fetchOffset, maxRecords); // refuse before anything changes
        }
        if (f.truncating) {
            maybeTruncate(f, l, log);
        }
        long waitMs = maxWaitMs != null ? maxWaitMs : fetchWaitMs;
        int maxBytes = maxBytesFor(l, f.fetchOffset, maxRecords);
        FetchParams params = new FetchParams(f.id, f.session, waitMs, 1, maxBytes, FetchIsolation.LOG_END,
            Optional.empty());
        FetchRequest.PartitionData data = new FetchRequest.PartitionData(TOPIC_ID, f.fetchOffset,
            log.logStartOffset(), maxBytes, Optional.of(f.leaderEpoch), log.latestEpoch());
        FetchRequestState request = new FetchRequestState(f, l, f.session, f.leaderEpoch, params, data,
            time.milliseconds() + waitMs, maxRecords);
        FetchAnswer answer = read(request, true);
        boolean immediate = waitMs <= 0 || answer.error() != Errors.NONE
            || answer.read().divergingEpoch().isPresent() || answer.records().sizeInBytes() > 0;
        answerOrPark(f, request, answer, immediate);
    }

    /** bytesFor, with a max_records Kafka cannot express refused (the session stays usable). */
    private int maxBytesFor(Broker leader, long fetchOffset, Integer maxRecords) throws Rejected, IOException {
        if (maxRecords == null) {
            return MAX_BYTES;
        }
        try {
            return bytesFor(leader, fetchOffset, maxRecords);
        } catch (IllegalArgumentException e) {
            throw new Rejected("FETCH-LEADER-3", e.getMessage());
        }
    }

    /**
     * max_records stands for replica.fetch.max.bytes (FETCH-LEADER-3): the bytes of the whole
     * batches from the fetch offset that hold at most that many records. Kafka never splits a
     * batch: a limit ending inside a later batch stops before it (fewer records, as CHOICE-4
     * allows); one ending inside the first batch has no counterpart, since Kafka would return
     * that whole batch (minOneMessage), more records than asked.
     */
    private int bytesFor(Broker leader, long fetchOffset, int maxRecords) throws IOException {
        if (!leader.online || leader.partition == null || leader.partition.log().isEmpty()) {
            return MAX_BYTES;
        }
        UnifiedLog log = leader.partition.log().get();
        if (fetchOffset < log.logStartOffset() || fetchOffset >= log.logEndOffset()) {
            return MAX_BYTES;
        }
        List<Batch> batches = new ArrayList<>();
        for (RecordBatch batch : log.read(fetchOffset, MAX_BYTES, FetchIsolation.LOG_END, true).records.batches()) {
            batches.add(new Batch(batch.baseOffset(), batch.lastOffset(), batch.sizeInBytes()));
        }
        return wholeBatchBytes(fetchOffset, maxRecords, batches, true);
    }

    /** Partition.fetchRecords on the leader; an ApiException becomes the error answer. */
    @Override
    protected FetchAnswer read(FetchRequestState request, boolean updateFetchState) throws IOException {
        Broker l = request.leader();
        try {
            if (!l.online || l.partition == null) {
                throw Errors.NOT_LEADER_OR_FOLLOWER.exception();
            }
            LogReadInfo read = l.partition.fetchRecords(request.params(), request.data(), time.milliseconds(),
                request.params().maxBytes, true, updateFetchState);
            return new FetchAnswer(request, Errors.NONE, read, toMemoryRecords(read.fetchedData().records));
        } catch (ApiException e) {
            return new FetchAnswer(request, Errors.forException(e), null, MemoryRecords.EMPTY);
        }
    }

    /** DelayedFetch.tryComplete for the fetches parked at a leader: complete when there is
     * something to read (the leader's LEO moved from the fetch offset), when the leader no
     * longer leads at the request's epoch, or (force) at the deadline. The completion reads
     * again without updating the follower's state (DelayedFetch.onComplete). */
    @Override
    protected boolean fetchReady(FetchRequestState p) {
        Broker l = p.leader();
        return l.partition == null || !l.partition.isLeader()
            || l.partition.getLeaderEpoch() != p.requestEpoch()
            || l.partition.localLogOrException().logEndOffset() != p.data().fetchOffset;
    }

    @Override
    protected FetchAnswer answerParked(FetchRequestState p) throws IOException {
        Broker l = p.leader();
        FetchRequestState q = p;
        if (p.maxRecords() != null) {
            // replica.fetch.max.bytes stands for max_records: the bytes are those of the
            // batches there are now (an error if it would cut one).
            int maxBytes;
            try {
                maxBytes = bytesFor(l, p.data().fetchOffset, p.maxRecords());
            } catch (IllegalArgumentException e) {
                // The first batch holds more records than max_records: Kafka answers it
                // whole (minOneMessage), which the spec's fetch cannot express; the
                // judge sees the extra records (docs/kafka.md, "no Kafka counterpart").
                maxBytes = 1;
            }
            FetchParams params = new FetchParams(p.params().replicaId, p.params().replicaEpoch,
                p.params().maxWaitMs, p.params().minBytes, maxBytes, p.params().isolation,
                p.params().clientMetadata);
            FetchRequest.PartitionData data = new FetchRequest.PartitionData(TOPIC_ID,
                p.data().fetchOffset, p.data().logStartOffset, maxBytes, p.data().currentLeaderEpoch,
                p.data().lastFetchedEpoch);
            q = new FetchRequestState(p.follower(), l, p.session(), p.requestEpoch(), params, data,
                p.deadlineMs(), p.maxRecords());
        }
        return read(q, false);
    }

    /**
     * The follower processes the answer as AbstractFetcherThread.processFetchRequest does:
     * errors change nothing (the thread backs off), OFFSET_OUT_OF_RANGE goes through
     * fetchOffsetAndTruncate, a diverging epoch through truncateOnFetchResponse (and no
     * watermark update, KAFKA-14704), records through ReplicaFetcherThread.processPartitionData
     * (appendRecordsToFollowerOrFutureReplica, then the HW and log start from the response).
     */
    @Override
    protected boolean forCurrentFetch(Broker f, FetchAnswer answer) {
        FetchRequestState req = answer.request();
        return f.leaderEpoch == req.requestEpoch()
            && req.leader().name.equals(f.leader) && f.fetchOffset != null;
    }

    @Override
    protected void processFetchAnswer(Broker f, FetchAnswer answer) throws IOException {
        FetchRequestState req = answer.request();
        Broker l = req.leader();
        UnifiedLog log = f.partition.localLogOrException();
        if (answer.error() == Errors.OFFSET_OUT_OF_RANGE) {
            // The ListOffsets round trip (LeaderEndPoint.fetchLatestOffset / fetchEarliestOffset)
            // reaches a live broker that still leads in the follower's epoch, else it fails
            // (Partition.localLogWithEpochOrThrow) and the fetcher retries: FOLLOWER-OOR-4.
            if (l.online && l.partition != null && l.partition.log().isDefined()
                && l.partition.isLeader() && l.partition.getLeaderEpoch() == f.leaderEpoch) {
                UnifiedLog leaderLog = l.partition.localLogOrException();
                fetchOffsetAndTruncate(f, log.logEndOffset(), leaderLog.logStartOffset(), leaderLog.logEndOffset());
            }
            return;
        }
        if (answer.error() != Errors.NONE) {
            return; // FOLLOWER-FETCH-3: the fetcher backs off and retries
        }
        LogReadInfo read = answer.read();
        Optional<FetchResponseData.EpochEndOffset> diverging = read.divergingEpoch();
        if (diverging.isPresent()) {
            truncateOnFetch(f, log, diverging.get().epoch(), diverging.get().endOffset());
            return;
        }
        MemoryRecords records = answer.records();
        if (records.sizeInBytes() > 0) {
            f.partition.appendRecordsToFollowerOrFutureReplica(records, false, f.leaderEpoch);
        }
        f.fetchOffset = log.logEndOffset();
        log.maybeUpdateHighWatermark(read.highWatermark());
        log.maybeIncrementLogStartOffset(read.logStartOffset(),
            org.apache.kafka.storage.internals.log.LogStartOffsetIncrementReason.LeaderOffsetIncremented);
    }

    private static MemoryRecords toMemoryRecords(Records records) throws IOException {
        if (records instanceof MemoryRecords m) {
            return m;
        }
        ByteBuffer buffer = ByteBuffer.allocate(records.sizeInBytes());
        ((FileRecords) records).readInto(buffer, 0);
        return MemoryRecords.readableRecords(buffer);
    }

    /** AbstractFetcherThread.maybeTruncate for a partition in Truncating state: an
     * OffsetsForLeaderEpoch exchange with the leader, or truncation to the HW without an epoch. */
    private void maybeTruncate(Broker f, Broker l, UnifiedLog log) {
        Optional<Integer> latest = log.latestEpoch();
        if (latest.isEmpty()) {
            f.partition.truncateTo(f.fetchOffset, false);
            f.truncating = false;
            f.fetchOffset = log.logEndOffset();
            return;
        }
        if (l.partition == null) {
            return;
        }
        OffsetForLeaderEpochResponseData.EpochEndOffset answer = l.partition.lastOffsetForLeaderEpoch(
            Optional.of(f.leaderEpoch), latest.get(), true);
        if (answer.errorCode() != Errors.NONE.code()) {
            return;
        }
        truncateOnFetch(f, log, answer.leaderEpoch(), answer.endOffset());
    }

    /** AbstractFetcherThread.getOffsetTruncationState and truncate (diverging epoch or an
     * OffsetsForLeaderEpoch answer). */
    private void truncateOnFetch(Broker f, UnifiedLog log, int leaderEpoch, long leaderEndOffset) {
        long replicaEnd = log.logEndOffset();
        long target;
        if (leaderEndOffset < 0) {
            target = f.fetchOffset;
        } else if (leaderEpoch < 0) {
            target = Math.min(leaderEndOffset, replicaEnd);
        } else {
            Optional<OffsetAndEpoch> mine = log.endOffsetForEpoch(leaderEpoch);
            if (mine.isPresent()) {
                if (mine.get().epoch() != leaderEpoch) {
                    target = Math.min(mine.get().offset(), replicaEnd); // not complete: the next fetch goes on
                } else {
                    target = Math.min(Math.min(mine.get().offset(), leaderEndOffset), replicaEnd);
                }
            } else {
                target = Math.min(leaderEndOffset, replicaEnd);
            }
        }
        // ReplicaFetcherThread.truncate calls Partition.truncateTo whatever the target: at or past
        // the LEO it removes no record but still drops the cache entries from the LEO (KAFKA-10706).
        f.partition.truncateTo(target, false);
        f.fetchOffset = target;
        // updateFetchOffsetAndMaybeMarkTruncationComplete: with truncation on fetch the state is
        // Fetching even when the truncation is not complete; the next fetch carries the new epoch.
        f.truncating = false;
    }

    @Override
    protected void truncateTo(Broker f, long offset) {
        f.partition.truncateTo(offset, false);
    }

    @Override
    protected void truncateFullyAndStartAt(Broker f, long offset) {
        f.partition.truncateFullyAndStartAt(offset, false, Optional.empty());
    }

    @Override
    protected EpochEnd lastOffsetForLeaderEpoch(Broker b, int epoch, Integer currentLeaderEpoch) {
        // the broker's request path reads the wire's current leader epoch with
        // RequestUtils.getLeaderEpoch: -1 (NO_PARTITION_LEADER_EPOCH) is "none", no fencing
        Optional<Integer> current = currentLeaderEpoch == null
            ? Optional.empty()
            : org.apache.kafka.common.requests.RequestUtils.getLeaderEpoch(currentLeaderEpoch);
        OffsetForLeaderEpochResponseData.EpochEndOffset answer = b.partition.lastOffsetForLeaderEpoch(
            current, epoch, true);
        Errors error = Errors.forCode(answer.errorCode());
        return new EpochEnd(error == Errors.NONE ? null : error.name(), answer.leaderEpoch(), answer.endOffset());
    }

    // ------------------------------------------------------------------ time

    /** LogManager.checkpointLogStartOffsets (the kafka-log-start-offset-checkpoint task). */
    @Override
    protected void checkpointLogStart(Broker b) {
        b.logManager.checkpointLogStartOffsets();
    }

    /** ReplicaManager.checkpointHighWatermarks for this broker's one partition. */
    @Override
    protected void checkpoint(Broker b) {
        if (!b.online || b.partition == null || b.partition.log().isEmpty()) {
            return;
        }
        b.hwCheckpoint.write(Map.of(TP, b.partition.log().get().highWatermark()));
    }

    // ------------------------------------------------------------------ observation

    private Snapshot snapshot(Broker b) {
        UnifiedLog log = b.partition.localLogOrException();
        List<String> records = new ArrayList<>();
        try {
            long offset = log.logStartOffset();
            while (offset < log.logEndOffset()) {
                FetchDataInfo info = log.read(offset, MAX_BYTES, FetchIsolation.LOG_END, true);
                long before = offset;
                for (RecordBatch batch : info.records.batches()) {
                    for (Record record : batch) {
                        records.add(recordText(record.value(), batch.partitionLeaderEpoch()));
                        offset = record.offset() + 1;
                    }
                }
                if (offset == before) {
                    break;
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read the log of " + b.name + ": " + e, e);
        }
        List<List<Long>> cache = new ArrayList<>();
        for (EpochEntry e : log.leaderEpochCache().epochEntries()) {
            cache.add(List.of((long) e.epoch(), e.startOffset()));
        }
        return new Snapshot(records, log.logStartOffset(), log.logEndOffset(), log.highWatermark(), cache, null, -1);
    }

    @Override
    protected long readHwCheckpoint(File file) {
        try {
            return new OffsetCheckpointFile(file, null).read().getOrDefault(TP, 0L);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + file + ": " + e, e);
        }
    }

    // ------------------------------------------------------------------ ClusterCore's hooks

    /** The broker epoch it registers with: 100 + id, then 1000 more at each restart. */
    @Override
    protected long nextSession(Broker b) {
        return b.session == 0 ? 100 + b.id : b.session + 1000;
    }

    /** KRaft: an ISR removal writes a new leader epoch only when the leader changes. */
    @Override
    protected boolean isrRemovalIsNewLeaderEpoch() {
        return false;
    }

    /** KRaft: an ISR-only change reaches brokers as metadata, at once unless an earlier record
     * is still on its way (records apply in log order). */
    @Override
    protected void publishIsrChange() {
        sendInOrder(null);
    }

    /** This line never checked elect.notify's names (an unknown one is never notified). */
    @Override
    protected boolean refusesUnknownNotify() {
        return false;
    }

    /** CRASH-2: not in hello's step_fields, so kconform's runner skips such fixtures; a fuzzer
     * that draws one anyway gets a refusal, and the session stays usable. */
    @Override
    public void refuseUnflushedCrash() throws Rejected {
        throw new Rejected("CRASH-2", "crash.unflushed_from (a power failure) is not"
            + " supported: it would need control of the page cache");
    }

    @Override
    protected long appendAsLeader(Broker leader, List<String> values, int requiredAcks) throws KafkaError {
        SimpleRecord[] records = values.stream()
            .map(v -> new SimpleRecord(v.getBytes(StandardCharsets.UTF_8)))
            .toArray(SimpleRecord[]::new);
        try {
            LogAppendInfo info = leader.partition.appendRecordsToLeader(
                MemoryRecords.withRecords(Compression.NONE, records), AppendOrigin.CLIENT,
                requiredAcks, RequestLocal.noCaching(), VerificationGuard.SENTINEL, (short) 13);
            return info.lastOffset() + 1;
        } catch (ApiException e) {
            throw new KafkaError(Errors.forException(e).name());
        }
    }

    @Override
    protected String ackOutcome(Broker leader, long requiredOffset) {
        Tuple2<Object, Errors> answer = leader.partition.checkEnoughReplicasReachOffset(requiredOffset);
        return ackOutcome((Boolean) answer._1(), answer._2() == Errors.NONE ? null : answer._2().name());
    }

    @Override
    protected void shrinkIsr(Broker b) {
        b.partition.maybeShrinkIsr();
    }

    /** A missing checkpoint counts as behind (-1), so an HW of 0 is written too. */
    @Override
    protected boolean checkpointBehind(Broker b) {
        long now = b.hwCheckpoint.read().getOrDefault(TP, -1L);
        return b.partition.log().isDefined() && b.partition.log().get().highWatermark() != now;
    }

    @Override
    protected ReplicaView view(Broker b) {
        Snapshot s = b.online ? snapshot(b) : b.lastSeen;
        long checkpointHw = checkpointedHw(b);
        // The spec's "truncating" means "must ask OffsetsForLeaderEpoch first". Kafka's fetcher
        // is also Truncating when the log has no epoch at all, but then it only truncates to its
        // HW locally (truncateToHighWatermark) and fetches: that is "fetching" in the spec's sense.
        boolean asksEpoch = b.truncating && b.fetchOffset != null && s.epochCache().size() > 0;
        Map<String, Object> remote = null;
        if (b.online && "leader".equals(b.role)) {
            remote = remoteLeos(b, other -> {
                Option<org.apache.kafka.server.replica.Replica> replica = b.partition.getReplica(other.id);
                return replica.isDefined() ? replica.get().stateSnapshot().logEndOffset() : -1L;
            });
        }
        return new ReplicaView(b.online, b.role, b.leader, b.leaderEpoch, s.leo(), s.hw(), checkpointHw, s.log(),
            s.epochCache(), asksEpoch ? "truncating" : "fetching", s.logStart(), remote);
    }

    @Override
    protected void observeMore(Map<String, Object> out) {
        out.put("epoch_query", epochQuery);
    }

    @Override
    protected String leaderFollowed(Broker f) {
        return "follower".equals(f.role) ? f.leader : null;
    }
}
