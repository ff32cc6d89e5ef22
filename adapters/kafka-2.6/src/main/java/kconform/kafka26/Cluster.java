package kconform.kafka26;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import kconform.adapter.ClusterCore;
import kconform.adapter.FollowerAnswer;
import kconform.adapter.FollowerFetch;
import kconform.adapter.KafkaError;
import kconform.adapter.LogDirs;
import kconform.adapter.Registration;
import kconform.adapter.Rejected;
import kconform.adapter.ReplicaView;
import kconform.adapter.Snapshot;
import kafka.api.ApiVersion;
import kafka.api.LeaderAndIsr;
import kafka.cluster.DelayedOperations;
import kafka.cluster.Partition;
import kafka.cluster.PartitionStateStore;
import kafka.cluster.Replica;
import kafka.log.AppendOrigin;
import kafka.log.CleanerConfig;
import kafka.log.LeaderOffsetIncremented$;
import kafka.log.Log;
import kafka.log.LogAppendInfo;
import kafka.log.LogConfig;
import kafka.log.LogManager;
import kafka.log.LogReadInfo;
import kafka.server.BrokerState;
import kafka.server.BrokerTopicStats;
import kafka.server.FetchDataInfo;
import kafka.server.FetchLogEnd$;
import kafka.server.LogDirFailureChannel;
import kafka.server.LogOffsetMetadata;
import kafka.server.MetadataCache;
import kafka.server.OffsetAndEpoch;
import kafka.server.checkpoints.OffsetCheckpointFile;
import kafka.server.checkpoints.OffsetCheckpoints;
import kafka.server.epoch.EpochEntry;
import kafka.server.epoch.LeaderEpochFileCache;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.LeaderAndIsrRequestData.LeaderAndIsrPartitionState;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.Records;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.requests.EpochEndOffset;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One partition replicated on a few simulated brokers, each running Kafka 2.6's own
 * Partition over a real kafka.log.Log, driven one kconform step at a time (the
 * leader-epoch generation: a follower asks OffsetsForLeaderEpoch before it fetches, the
 * leader writes ISR changes to ZooKeeper itself).
 *
 * What runs Kafka's code: the leader's append (Partition.appendRecordsToLeader), its read
 * for a follower (Partition.readRecords, fencing included) and its record of the follower's
 * fetch (Partition.updateFollowerFetchState: the follower's state, ISR expansion, the HW),
 * the follower's append (appendRecordsToFollowerOrFutureReplica) and HW
 * (Log.updateHighWatermark), truncation (Partition.truncateTo, truncateFullyAndStartAt,
 * Log.endOffsetForEpoch), OffsetsForLeaderEpoch (Partition.lastOffsetForLeaderEpoch), ISR
 * expiry (maybeShrinkIsr, its ZooKeeper write through PartitionStateStore), leader and
 * follower transitions (makeLeader / makeFollower with a LeaderAndIsrPartitionState),
 * acks=all completion (checkEnoughReplicasReachOffset), log recovery on restart
 * (LogManager.startup) and the HW read back from replication-offset-checkpoint.
 *
 * What the adapter decides itself (docs/kafka.md, "not under test"): the ZooKeeper
 * controller's choices and its conditional znode write, when the fetcher thread runs (one
 * request per step), the order of the periodic tasks on a tick, and the follower-side
 * control flow of AbstractFetcherThread / ReplicaFetcherThread, rewritten after 2.6.3's.
 */
final class Cluster extends ClusterCore<Broker, Cluster.FetchRequestState, Cluster.FetchAnswer, ManualTime> {
    static final String TOPIC = "kconform";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);
    private static final int MAX_BYTES = 1 << 20;
    private static final int CONTROLLER_EPOCH = 1;

    /** A follower's fetch as the leader received it (FetchRequest.PartitionData and the session). */
    record FetchRequestState(Broker follower, Broker leader, long session, int requestEpoch, long fetchOffset,
                             long followerLogStart, long deadlineMs, Integer maxRecords) implements FollowerFetch {
    }

    /** The leader's answer: an error, or what Partition.readRecords read. */
    record FetchAnswer(FetchRequestState request, Errors error, LogReadInfo read, MemoryRecords records) implements FollowerAnswer<FetchRequestState> {
    }

    /** The leader's OffsetsForLeaderEpoch answer (requestedEpoch null: the follower has no epoch). */
    record EpochAnswer(Broker leader, long session, int requestEpoch, Integer requestedEpoch, Errors error,
                       int epoch, long endOffset) {
    }

    /** A fresh partition, or (protocol 3) the given state of spec/adapter-protocol.md "reset". */
    Cluster(Map<String, Object> config, Map<String, Object> initial) throws IOException {
        super(config, new ManualTime(), "kconform-kafka26-", Broker::new);
        begin(config, initial);
    }

    /** A new topic's followers start fetching at once: their logs are empty and have no epoch,
     * so AbstractFetcherThread.maybeTruncate only truncates to the HW (0) locally. */
    @Override
    protected void startedNewPartition() {
        for (Broker b : brokers) {
            if (b.fetchOffset != null && b.truncating && b.partition.localLogOrException().latestEpoch().isEmpty()) {
                truncateToHighWatermark(b);
            }
        }
    }

    /**
     * Builds a given state as Kafka's own unit tests do (PartitionTest, ReplicaFetcherThreadTest):
     * each broker's log appended as follower batches (one record per batch) from its log start,
     * the leader-epoch cache set to the given entries, the HW and its checkpoint written, then
     * makeLeader / makeFollower with the partition state the broker knows; a leader's view of a
     * follower is set through Replica.updateFetchState.
     */
    @Override
    @SuppressWarnings("unchecked")
    protected void fromGiven(Map<String, Object> initial) throws IOException {
        Map<String, Map<String, Object>> given = (Map<String, Map<String, Object>>) initial.get("replicas");
        for (Broker b : brokers) {
            Map<String, Object> rs = given.get(b.name);
            start(b, true);
            Log log = b.partition.localLogOrException();
            long logStart = ((Number) rs.get("log_start")).longValue();
            if (logStart > 0) {
                log.truncateFullyAndStartAt(logStart);
            }
            List<String> records = (List<String>) rs.get("log");
            long offset = logStart;
            for (String r : records) {
                SimpleRecord record = new SimpleRecord(valueOf(r));
                log.appendAsFollower(MemoryRecords.withRecords(offset, CompressionType.NONE, epochOf(r), record));
                offset += 1;
            }
            LeaderEpochFileCache cache = log.leaderEpochCache().get();
            cache.clearAndFlush();
            for (List<Number> e : (List<List<Number>>) rs.get("epoch_cache")) {
                cache.assign(e.get(0).intValue(), e.get(1).longValue());
            }
            writeCheckpoint(b, ((Number) rs.get("checkpoint_hw")).longValue());
            log.updateHighWatermark(((Number) rs.get("hw")).longValue());
            String knownLeader = (String) rs.get("leader");
            int knownEpoch = ((Number) rs.get("leader_epoch")).intValue();
            apply(b, new Registration(knownLeader == null ? null : broker(knownLeader).id, knownEpoch,
                ctrlPartitionEpoch, List.copyOf(ctrlIsr)), false);
            if (b.fetchOffset != null) {
                boolean truncating = "truncating".equals(rs.get("fetch_state"));
                b.truncating = truncating;
                b.fetchOffset = truncating ? log.highWatermark() : log.logEndOffset();
            }
            // makeLeader may have moved the HW (an ISR of one); the given state says where it is.
            log.updateHighWatermark(((Number) rs.get("hw")).longValue());
            if (b.partition.isLeader()) {
                givenFollowerViews(b, rs, (f, leo, caughtUpMs) -> {
                    // a given LEO is a fetch at it now (the previous fetch: at the leader's LEO, now);
                    // then the given caught-up time (Replica.resetLastCaughtUpTime, as makeLeader
                    // sets it), the previous fetch kept (unknown, time 0, without a given LEO)
                    kafka.cluster.Replica replica = b.partition.getReplica(f.id).get();
                    long now = time.milliseconds();
                    if (leo != null) {
                        replica.updateFetchState(new LogOffsetMetadata(leo, -1L, -1), 0L, now, log.logEndOffset());
                    }
                    replica.resetLastCaughtUpTime(leo != null ? log.logEndOffset() : -1L, leo != null ? now : 0L,
                        caughtUpMs != null ? caughtUpMs : 0L);
                });
            }
        }
    }

    // ------------------------------------------------------------------ broker life

    private Properties topicProps() {
        Properties props = new Properties();
        props.put(LogConfig.MinInSyncReplicasProp(), Integer.toString(minIsr));
        props.put(LogConfig.UncleanLeaderElectionEnableProp(), Boolean.toString(unclean));
        return props;
    }

    @Override
    protected void startKafka(Broker b, boolean isNew) throws IOException {
        Properties props = topicProps();
        LogConfig logConfig = LogConfig.apply(props, scala.collection.immutable.Set$.MODULE$.empty());
        CleanerConfig cleaner = new CleanerConfig(1, 4L * 1024 * 1024, 0.9d, 1024 * 1024, 32 * 1024 * 1024,
            Double.MAX_VALUE, 15_000L, false, "MD5");
        b.logManager = new LogManager(CollectionConverters.asScala(List.of(b.dir.getAbsoluteFile())).toSeq(),
            CollectionConverters.asScala(List.<File>of()).toSeq(), scala.collection.immutable.Map$.MODULE$.empty(),
            logConfig, cleaner, 1, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, 600_000,
            new NoopScheduler(), new BrokerState(), new BrokerTopicStats(), new LogDirFailureChannel(1), time);
        try {
            b.logManager.startup();
        } catch (Exception e) {
            throw new IOException("LogManager.startup failed for broker " + b.name + ": " + e, e);
        }
        b.hwCheckpoint = new OffsetCheckpointFile(b.hwCheckpointFile(), null);
        b.partition = new Partition(TP, lagMs, ApiVersion.latestVersion(), b.id, time, stateStore(b, props),
            delayedOperations(), new MetadataCache(b.id), b.logManager);
        b.partition.createLogIfNotExists(isNew, false, offsetCheckpoints(b));
    }

    @Override
    protected void stop(Broker b) {
        b.lastSeen = snapshot(b);
        Option<Log> log = b.partition.log();
        if (log.isDefined()) {
            log.get().close(); // no clean-shutdown marker: the next start recovers the log
        }
        LogDirs.releaseScalaDirLocks(b.logManager);
        b.online = false;
        b.partition = null;
        b.logManager = null;
        b.inbox.clear();
        dropFetcher(b);
    }

    /** ReplicaFetcherManager.removeFetcherForPartitions: the fetcher session ends. */
    private static void dropFetcher(Broker b) {
        b.fetchOffset = null;
        b.truncating = false;
        b.fetchLeader = null;
        b.parked = null;
        b.inFlight = null; // MSG-DROP-1: answers to the old session are dropped
        b.epochInFlight = null;
    }

    // ------------------------------------------------------------------ Kafka's collaborators

    /**
     * The leader's ISR writes go to ZooKeeper as ReplicationUtils.updateLeaderAndIsr does: a
     * conditional update of the partition's znode, refused when its version moved since the
     * leader learned it (a new LeaderAndIsr is then on its way). No LeaderAndIsr follows an ISR
     * write (the controller only propagates it as metadata).
     */
    private PartitionStateStore stateStore(Broker b, Properties props) {
        return new PartitionStateStore() {
            @Override
            public Properties fetchTopicConfig() {
                return (Properties) props.clone();
            }

            @Override
            public Option<Object> shrinkIsr(int controllerEpoch, LeaderAndIsr leaderAndIsr) {
                return zkWrite(b, leaderAndIsr);
            }

            @Override
            public Option<Object> expandIsr(int controllerEpoch, LeaderAndIsr leaderAndIsr) {
                return zkWrite(b, leaderAndIsr);
            }
        };
    }

    private Option<Object> zkWrite(Broker b, LeaderAndIsr request) {
        if (!b.online || request.zkVersion() != ctrlPartitionEpoch) {
            return Option.empty();
        }
        List<Integer> isr = new ArrayList<>();
        for (Object id : CollectionConverters.asJava(request.isr())) {
            isr.add((Integer) id);
        }
        isr.sort(Comparator.naturalOrder());
        ctrlIsr = isr;
        ctrlPartitionEpoch += 1;
        return Option.apply((Object) ctrlPartitionEpoch);
    }

    /** Purgatories are the adapter's (pending produces, parked fetches). */
    private static DelayedOperations delayedOperations() {
        return new DelayedOperations(TP, null, null, null) {
            @Override
            public void checkAndCompleteAll() {
            }

            @Override
            public void checkAndCompleteFetch() {
            }

            @Override
            public void checkAndCompleteProduce() {
            }

            @Override
            public void checkAndCompleteDeleteRecords() {
            }

            @Override
            public int numDelayedDelete() {
                return 0;
            }

            @Override
            public int numDelayedFetch() {
                return 0;
            }

            @Override
            public int numDelayedProduce() {
                return 0;
            }
        };
    }

    private static OffsetCheckpoints offsetCheckpoints(Broker b) {
        return (dir, tp) -> b.hwCheckpoint.read().get(tp);
    }

    private static void writeCheckpoint(Broker b, long hw) {
        b.hwCheckpoint.write(new scala.collection.immutable.Map.Map1<TopicPartition, Object>(TP, hw));
    }

    // ------------------------------------------------------------------ controller

    private LeaderAndIsrPartitionState toKafka(Registration r, boolean isNew) {
        List<Integer> replicas = new ArrayList<>();
        for (Broker x : brokers) {
            replicas.add(x.id);
        }
        return new LeaderAndIsrPartitionState()
            .setTopicName(TOPIC)
            .setPartitionIndex(0)
            .setControllerEpoch(CONTROLLER_EPOCH)
            .setLeader(r.leader() == null ? LeaderAndIsr.NoLeader() : r.leader())
            .setLeaderEpoch(r.leaderEpoch())
            .setIsr(new ArrayList<>(r.isr()))
            .setZkVersion(r.partitionEpoch())
            .setReplicas(replicas)
            .setAddingReplicas(List.of())
            .setRemovingReplicas(List.of())
            .setIsNew(isNew);
    }

    /**
     * The broker handles a LeaderAndIsr as ReplicaManager.becomeLeaderOrFollower does (2.6.3):
     * only a newer leader epoch than the partition's; makeLeaders (Partition.makeLeader, the
     * fetcher removed) or makeFollowers (Partition.makeFollower when the leader is alive, then a
     * new fetcher at the HW in Truncating state; when there is no leader, only the log is
     * created and the partition keeps its leader, epoch and fetcher).
     */
    @Override
    protected void apply(Broker b, Registration r, boolean isNew) {
        if (!b.online) {
            return;
        }
        if (r.leaderEpoch() <= b.partition.getLeaderEpoch()) {
            return; // LAI-1: requestLeaderEpoch > currentLeaderEpoch only
        }
        LeaderAndIsrPartitionState state = toKafka(r, isNew);
        if (r.leader() != null && r.leader() == b.id) {
            b.partition.makeLeader(state, offsetCheckpoints(b));
            dropFetcher(b);
        } else if (r.leader() != null) {
            if (b.partition.makeFollower(state, offsetCheckpoints(b))) {
                dropFetcher(b);
                Log log = b.partition.localLogOrException();
                // ReplicaManager.makeFollowers: InitialFetchState(leader, epoch, HW); addPartitions: Truncating.
                b.fetchOffset = log.highWatermark();
                b.truncating = true;
                b.fetchLeader = brokers.get(r.leader()).name;
                b.fetchEpoch = b.partition.getLeaderEpoch();
            }
        } else {
            // makeFollowers: "cannot become follower since the new leader -1 is unavailable"
            b.partition.createLogIfNotExists(isNew, false, offsetCheckpoints(b));
        }
        completePendingAt(b);
    }

    // ------------------------------------------------------------------ steps

    /**
     * The follower's fetcher sends one fetch (ReplicaFetcherThread.buildFetch: fetch offset,
     * current leader epoch, log start), and the leader handles it as ReplicaManager.fetchMessages
     * does: Partition.readRecords, then Partition.updateFollowerFetchState (the follower's state,
     * the ISR, the HW); answered at once or parked.
     */
    @Override
    public void fetch(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        Broker f = broker(name);
        Broker l = followedLeader(f, "FETCH-PRE-1");
        if (f.truncating) {
            throw new Rejected("FETCH-PRE-1", name + " is truncating: it sends OffsetsForLeaderEpoch first");
        }
        refuseOutstandingFetch(f);
        Log log = f.partition.localLogOrException();
        long waitMs = maxWaitMs != null ? maxWaitMs : fetchWaitMs;
        FetchRequestState request = new FetchRequestState(f, l, f.session, f.fetchEpoch, f.fetchOffset,
            log.logStartOffset(), time.milliseconds() + waitMs, maxRecords);
        FetchAnswer answer = read(request, true);
        boolean immediate = waitMs <= 0 || answer.error() != Errors.NONE || answer.records().sizeInBytes() > 0;
        answerOrPark(f, request, answer, immediate);
    }

    /**
     * max_records stands for replica.fetch.max.bytes (FETCH-LEADER-3): the bytes of the whole
     * batches from the fetch offset that hold at most that many records. Kafka never splits a batch.
     */
    private int bytesFor(Broker leader, long fetchOffset, Integer maxRecords) {
        if (maxRecords == null || !leader.online || leader.partition == null || leader.partition.log().isEmpty()) {
            return MAX_BYTES;
        }
        Log log = leader.partition.log().get();
        if (fetchOffset < log.logStartOffset() || fetchOffset >= log.logEndOffset()) {
            return MAX_BYTES;
        }
        List<Batch> batches = new ArrayList<>();
        for (RecordBatch batch : log.read(fetchOffset, MAX_BYTES, FetchLogEnd$.MODULE$, true).records().batches()) {
            batches.add(new Batch(batch.baseOffset(), batch.lastOffset(), batch.sizeInBytes()));
        }
        return wholeBatchBytes(fetchOffset, maxRecords, batches, false);
    }

    /** ReplicaManager.readFromLocalLog on the leader (and, for a new fetch, updateFollowerFetchState). */
    @Override
    protected FetchAnswer read(FetchRequestState request, boolean updateFetchState) throws IOException {
        Broker l = request.leader();
        try {
            if (!l.online || l.partition == null) {
                throw Errors.NOT_LEADER_OR_FOLLOWER.exception();
            }
            int maxBytes = bytesFor(l, request.fetchOffset(), request.maxRecords());
            long now = time.milliseconds();
            LogReadInfo read = l.partition.readRecords(request.fetchOffset(), Optional.of(request.requestEpoch()),
                maxBytes, FetchLogEnd$.MODULE$, true, true);
            if (updateFetchState) {
                l.partition.updateFollowerFetchState(request.follower().id, read.fetchedData().fetchOffsetMetadata(),
                    request.followerLogStart(), now, read.logEndOffset());
            }
            return new FetchAnswer(request, Errors.NONE, read, toMemoryRecords(read.fetchedData().records()));
        } catch (ApiException e) {
            return new FetchAnswer(request, Errors.forException(e), null, MemoryRecords.EMPTY);
        }
    }

    private static MemoryRecords toMemoryRecords(Records records) throws IOException {
        if (records instanceof MemoryRecords m) {
            return m;
        }
        ByteBuffer buffer = ByteBuffer.allocate(records.sizeInBytes());
        ((FileRecords) records).readInto(buffer, 0);
        return MemoryRecords.readableRecords(buffer);
    }

    /** DelayedFetch.tryComplete (2.6.3) for the fetches parked at a leader: complete when the
     * leader's LEO moved from the fetch offset, when it no longer leads at the request's epoch
     * (fetchOffsetSnapshot fences it, cases A and E), or at the deadline; onComplete reads again
     * without updating the follower's state. */
    @Override
    protected boolean fetchReady(FetchRequestState p) {
        Broker l = p.leader();
        return l.partition == null || !l.partition.isLeader()
            || l.partition.getLeaderEpoch() != p.requestEpoch()
            || l.partition.localLogOrException().logEndOffset() != p.fetchOffset();
    }

    /**
     * The follower processes the answer as AbstractFetcherThread.processFetchRequest (2.6.3)
     * does: an answer for another session or fetch offset is dropped; errors change nothing (the
     * thread backs off); OFFSET_OUT_OF_RANGE goes through fetchOffsetAndTruncate; data through
     * ReplicaFetcherThread.processPartitionData (append, then Log.updateHighWatermark with the
     * leader's HW and maybeIncrementLogStartOffset).
     */
    @Override
    protected boolean forCurrentFetch(Broker f, FetchAnswer answer) {
        FetchRequestState req = answer.request();
        return f.fetchEpoch == req.requestEpoch()
            && req.leader().name.equals(f.fetchLeader) && f.fetchOffset != null && !f.truncating
            && f.fetchOffset == req.fetchOffset();
    }

    @Override
    protected void processFetchAnswer(Broker f, FetchAnswer answer) throws IOException {
        FetchRequestState req = answer.request();
        Broker l = req.leader();
        Log log = f.partition.localLogOrException();
        if (answer.error() == Errors.OFFSET_OUT_OF_RANGE) {
            if (l.online && l.partition != null && l.partition.isLeader()
                && l.partition.getLeaderEpoch() == f.fetchEpoch) {
                Log leaderLog = l.partition.localLogOrException();
                fetchOffsetAndTruncate(f, log.logEndOffset(), leaderLog.logStartOffset(), leaderLog.logEndOffset());
            }
            return;
        }
        if (answer.error() != Errors.NONE) {
            return; // the fetcher backs off and retries
        }
        if (req.fetchOffset() != log.logEndOffset()) {
            throw new IllegalStateException("Offset mismatch for partition " + TP + ": fetched offset = "
                + req.fetchOffset() + ", log end offset = " + log.logEndOffset() + ".");
        }
        LogReadInfo read = answer.read();
        MemoryRecords records = answer.records();
        Option<LogAppendInfo> appended = f.partition.appendRecordsToFollowerOrFutureReplica(records, false);
        log.updateHighWatermark(read.highWatermark());
        log.maybeIncrementLogStartOffset(read.logStartOffset(), LeaderOffsetIncremented$.MODULE$);
        if (appended.isDefined() && appended.get().validBytes() > 0) {
            f.fetchOffset = appended.get().lastOffset() + 1;
        }
    }

    @Override
    protected void truncateTo(Broker f, long offset) {
        f.partition.truncateTo(offset, false);
    }

    @Override
    protected void truncateFullyAndStartAt(Broker f, long offset) {
        f.partition.truncateFullyAndStartAt(offset, false);
    }

    /**
     * The truncating follower's OffsetsForLeaderEpoch request (AbstractFetcherThread.maybeTruncate:
     * its latest epoch with its current leader epoch), answered by the leader's
     * Partition.lastOffsetForLeaderEpoch. A follower whose log has no epoch sends none: Kafka
     * truncates it to its HW locally (truncateToHighWatermark), which the adapter does when the
     * (empty) answer is delivered.
     */
    void epochRequest(String name) throws Rejected {
        Broker f = broker(name);
        Broker l = followedLeader(f, "EPOCH-PRE-1");
        if (!f.truncating) {
            throw new Rejected("EPOCH-PRE-1", name + " is not truncating");
        }
        if (f.epochInFlight != null) {
            throw new Rejected("EPOCH-PRE-1", name + " already has an OffsetsForLeaderEpoch answer in flight");
        }
        Option<Object> latest = f.partition.localLogOrException().latestEpoch();
        if (latest.isEmpty()) {
            f.epochInFlight = new EpochAnswer(l, f.session, f.fetchEpoch, null, Errors.NONE, -1, -1L);
            return;
        }
        int epoch = (Integer) latest.get();
        EpochEndOffset answer = l.partition.lastOffsetForLeaderEpoch(Optional.of(f.fetchEpoch), epoch, true);
        f.epochInFlight = new EpochAnswer(l, f.session, f.fetchEpoch, epoch, answer.error(),
            answer.leaderEpoch(), answer.endOffset());
    }

    /** AbstractFetcherThread.truncateToEpochEndOffsets: an answer for another leader epoch is
     * dropped; an error leaves the partition truncating; otherwise getOffsetTruncationState and
     * ReplicaFetcherThread.truncate (Partition.truncateTo, always called). */
    void deliverEpoch(String name) throws Rejected {
        Broker f = broker(name);
        EpochAnswer a = f.epochInFlight;
        if (a == null) {
            throw new Rejected("EPOCH-DELIVER-PRE-1", "deliver_epoch: no OffsetsForLeaderEpoch answer is in flight to "
                + name);
        }
        f.epochInFlight = null;
        if (!f.online || f.session != a.session() || f.fetchOffset == null || f.fetchEpoch != a.requestEpoch()
            || !f.truncating || !a.leader().name.equals(f.fetchLeader)) {
            return; // MSG-DROP-1
        }
        if (a.requestedEpoch() == null) {
            truncateToHighWatermark(f);
            return;
        }
        if (a.error() != Errors.NONE) {
            return; // EPOCH-FOLLOWER-1: still truncating, asks again
        }
        Log log = f.partition.localLogOrException();
        long replicaEnd = log.logEndOffset();
        long target;
        boolean complete = true;
        if (a.endOffset() == EpochEndOffset.UNDEFINED_EPOCH_OFFSET) {
            target = f.fetchOffset;
        } else if (a.epoch() == EpochEndOffset.UNDEFINED_EPOCH) {
            target = Math.min(a.endOffset(), replicaEnd);
        } else {
            Option<OffsetAndEpoch> mine = log.endOffsetForEpoch(a.epoch());
            if (mine.isDefined()) {
                if (mine.get().leaderEpoch() != a.epoch()) {
                    target = Math.min(mine.get().offset(), replicaEnd);
                    complete = false;
                } else {
                    target = Math.min(Math.min(mine.get().offset(), a.endOffset()), replicaEnd);
                }
            } else {
                target = Math.min(a.endOffset(), replicaEnd);
            }
        }
        f.partition.truncateTo(target, false);
        f.fetchOffset = target;
        f.truncating = !complete;
    }

    void epochRound(String name) throws Rejected {
        epochRequest(name);
        deliverEpoch(name);
    }

    /** AbstractFetcherThread.truncateToHighWatermark: a partition without epochs truncates to its
     * initial fetch offset (the HW it had when the fetcher was added) and fetches. */
    private void truncateToHighWatermark(Broker f) {
        f.partition.truncateTo(f.fetchOffset, false);
        f.truncating = false;
    }

    @Override
    protected EpochEnd lastOffsetForLeaderEpoch(Broker b, int epoch, Integer currentLeaderEpoch) {
        // the broker's request path reads the wire's current leader epoch as
        // OffsetsForLeaderEpochRequest does in 2.6 (RequestUtils.getLeaderEpoch over the
        // struct): -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH) is "none", no fencing
        Optional<Integer> current = currentLeaderEpoch == null
                || currentLeaderEpoch == org.apache.kafka.common.record.RecordBatch.NO_PARTITION_LEADER_EPOCH
            ? Optional.empty()
            : Optional.of(currentLeaderEpoch);
        EpochEndOffset answer = b.partition.lastOffsetForLeaderEpoch(current, epoch, true);
        Errors error = answer.error();
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
        writeCheckpoint(b, b.partition.log().get().highWatermark());
    }

    // ------------------------------------------------------------------ observation

    private Snapshot snapshot(Broker b) {
        Log log = b.partition.localLogOrException();
        List<String> records = new ArrayList<>();
        long offset = log.logStartOffset();
        while (offset < log.logEndOffset()) {
            FetchDataInfo info = log.read(offset, MAX_BYTES, FetchLogEnd$.MODULE$, true);
            long before = offset;
            for (RecordBatch batch : info.records().batches()) {
                for (Record record : batch) {
                    records.add(recordText(record.value(), batch.partitionLeaderEpoch()));
                    offset = record.offset() + 1;
                }
            }
            if (offset == before) {
                break;
            }
        }
        List<List<Long>> cache = new ArrayList<>();
        for (EpochEntry e : CollectionConverters.asJava(log.leaderEpochCache().get().epochEntries())) {
            cache.add(List.of((long) e.epoch(), e.startOffset()));
        }
        Option<Object> leaderId = b.partition.leaderReplicaIdOpt();
        String leader = leaderId.isDefined() ? brokers.get((Integer) leaderId.get()).name : null;
        return new Snapshot(records, log.logStartOffset(), log.logEndOffset(), log.highWatermark(), cache,
            leader, b.partition.getLeaderEpoch());
    }

    @Override
    protected long readHwCheckpoint(File file) {
        Option<Object> hw = new OffsetCheckpointFile(file, null).read().get(TP);
        return hw.isDefined() ? (Long) hw.get() : 0L;
    }

    // ------------------------------------------------------------------ ClusterCore's hooks

    @Override
    protected long appendAsLeader(Broker leader, List<String> values, int requiredAcks) throws KafkaError {
        SimpleRecord[] records = values.stream()
            .map(v -> new SimpleRecord(v.getBytes(StandardCharsets.UTF_8)))
            .toArray(SimpleRecord[]::new);
        try {
            LogAppendInfo info = leader.partition.appendRecordsToLeader(
                MemoryRecords.withRecords(CompressionType.NONE, records), AppendOrigin.Client$.MODULE$, requiredAcks);
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

    @Override
    protected boolean checkpointBehind(Broker b) {
        return b.partition.log().isDefined() && b.partition.log().get().highWatermark() != checkpointedHw(b);
    }

    @Override
    protected ReplicaView view(Broker b) {
        Snapshot s = b.online ? snapshot(b) : b.lastSeen;
        String role = !b.online ? "none" : b.partition.isLeader() ? "leader" : b.fetchOffset != null ? "follower" : "none";
        Map<String, Object> remote = null;
        if (b.online && b.partition.isLeader()) {
            remote = remoteLeos(b, other -> {
                Option<Replica> replica = b.partition.getReplica(other.id);
                return replica.isDefined() ? replica.get().logEndOffset() : -1L;
            });
        }
        String fetchState = b.online && b.truncating && b.fetchOffset != null ? "truncating" : "fetching";
        return new ReplicaView(b.online, role, s.leader(), s.leaderEpoch(), s.leo(), s.hw(), checkpointedHw(b), s.log(),
            s.epochCache(), fetchState, s.logStart(), remote);
    }

    @Override
    protected void observeMore(Map<String, Object> out) {
        out.put("epoch_query", epochQuery);
    }

    /** Kafka's gauges hold the closed LogManagers and Partitions; one JVM runs many resets. */
    @Override
    protected void releaseGlobals() {
        com.yammer.metrics.core.MetricsRegistry registry = kafka.metrics.KafkaYammerMetrics.defaultRegistry();
        for (com.yammer.metrics.core.MetricName metric : List.copyOf(registry.allMetrics().keySet())) {
            registry.removeMetric(metric);
        }
    }

    @Override
    protected String leaderFollowed(Broker f) {
        return f.fetchLeader;
    }
}
