package kconform.kafka010;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import kconform.adapter.ClusterCore;
import kconform.adapter.FollowerAnswer;
import kconform.adapter.FollowerFetch;
import kconform.adapter.KafkaError;
import kconform.adapter.LogDirs;
import kconform.adapter.Registration;
import kconform.adapter.Rejected;
import kconform.adapter.ReplicaView;
import kconform.adapter.Snapshot;
import kafka.cluster.Partition;
import kafka.cluster.Replica;
import kafka.log.CleanerConfig;
import kafka.log.Log;
import kafka.log.LogAppendInfo;
import kafka.log.LogConfig;
import kafka.log.LogManager;
import kafka.server.BrokerState;
import kafka.server.FetchDataInfo;
import kafka.server.KafkaConfig;
import kafka.server.LogOffsetMetadata;
import kafka.server.LogReadResult;
import kafka.server.OffsetCheckpoint;
import kafka.server.QuotaType;
import kafka.server.ReplicaManager;
import kafka.server.ReplicationQuotaManager;
import kafka.server.ReplicationQuotaManagerConfig;
import kafka.server.QuotaFactory;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.CompressionType;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.LogEntry;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.Records;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.PartitionState;
import scala.Option;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * One partition replicated on a few simulated brokers, each running Kafka 0.10.2's own
 * Partition and Replica over a real kafka.log.Log, with the ReplicaManager Partition needs,
 * driven one kconform step at a time (the hw-truncation generation: no leader epochs in the
 * log, a new follower truncates to its HW).
 *
 * What runs Kafka's code: the leader's append (Partition.appendRecordsToLeader), its read
 * for a follower (ReplicaManager.readFromLocalLog) and its record of the follower's fetch
 * (Partition.updateReplicaLogReadResult: the follower's LEO, ISR expansion, the HW), ISR
 * expiry (Partition.maybeShrinkIsr and its ZooKeeper write), leader and follower transitions
 * (makeLeader / makeFollower with a PartitionState, and the truncation to the HW
 * ReplicaManager.makeFollowers does with LogManager.truncateTo), acks=all completion
 * (checkEnoughReplicasReachOffset), log recovery on restart (LogManager.startup) and the HW
 * read back from replication-offset-checkpoint (Partition.getOrCreateReplica).
 *
 * What the adapter decides itself (docs/kafka.md): the ZooKeeper controller; when the fetcher
 * runs; the tick order; the follower side of ReplicaFetcherThread (append, HW = min(LEO,
 * leader HW), handleOffsetOutOfRange), rewritten after 0.10.2.2's; and the record key, which
 * carries the leader epoch the leader appended the record in (0.10 records have no epoch; the
 * key is replicated by Kafka like the value, so "value@epoch" is read back from every log).
 */
final class Cluster extends ClusterCore<Broker, Cluster.FetchRequestState, Cluster.FetchAnswer, ManualTime> {
    static final String TOPIC = "kconform";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);
    private static final int MAX_BYTES = 1 << 20;
    private static final int CONTROLLER_ID = 1000;
    private static final int CONTROLLER_EPOCH = 1;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A follower's fetch as the leader received it. */
    record FetchRequestState(Broker follower, Broker leader, long session, long fetchOffset, long deadlineMs,
                             Integer maxRecords) implements FollowerFetch {
    }

    /** The leader's answer (ReplicaManager's LogReadResult) and the records it carries. */
    record FetchAnswer(FetchRequestState request, Errors error, LogReadResult read, MemoryRecords records) implements FollowerAnswer<FetchRequestState> {
    }

    Cluster(Map<String, Object> config) throws IOException {
        super(config, new ManualTime(), "kconform-kafka010-", Broker::new);
        begin(config, null);
    }

    // ------------------------------------------------------------------ broker life

    private Properties brokerProps(Broker b) {
        Properties props = new Properties();
        props.put("broker.id", Integer.toString(b.id));
        props.put("zookeeper.connect", "kconform:2181");
        props.put("log.dirs", b.dir.getAbsolutePath());
        props.put("min.insync.replicas", Integer.toString(minIsr));
        props.put("unclean.leader.election.enable", Boolean.toString(unclean));
        props.put("replica.lag.time.max.ms", Long.toString(lagMs));
        // KafkaConfig requires replica.fetch.wait.max.ms <= replica.lag.time.max.ms. Only the
        // replica fetcher threads read it, which the adapter does not run: a fetch's wait is the
        // step's (or the config's) and the adapter's purgatory applies it. So a config beyond
        // Kafka's bound is given to KafkaConfig clamped, not refused (docs/kafka.md).
        props.put("replica.fetch.wait.max.ms", Long.toString(Math.min(fetchWaitMs, lagMs)));
        props.put("replica.high.watermark.checkpoint.interval.ms", Long.toString(Math.max(checkpointIntervalMs, 1)));
        props.put("log.message.format.version", "0.10.2");
        return props;
    }

    /** 0.10's broker has no isNew: a new topic's log is created by getOrCreateReplica. */
    @Override
    protected void startKafka(Broker b, boolean isNew) throws IOException {
        b.fetchLeader = null;
        Files.createDirectories(b.dir.toPath());
        KafkaConfig config = KafkaConfig.fromProps(brokerProps(b));
        LogConfig logConfig = LogConfig.apply(kafka.server.KafkaServer$.MODULE$.copyKafkaConfigToLog(config));
        CleanerConfig cleaner = new CleanerConfig(1, 4L * 1024 * 1024, 0.9d, 1024 * 1024, 32 * 1024 * 1024,
            Double.MAX_VALUE, 15_000L, false, "MD5");
        b.logManager = new LogManager(new File[] {b.dir.getAbsoluteFile()},
            scala.collection.immutable.Map$.MODULE$.<String, LogConfig>empty(), logConfig, cleaner, 1,
            Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, new NoopScheduler(), new BrokerState(), time);
        b.logManager.startup();
        b.zkUtils = ZooKeeperStandIn.zkUtils((path, data, expect) -> zkWrite(b, data, expect));
        Metrics metrics = new Metrics();
        ReplicationQuotaManager quota = new ReplicationQuotaManager(
            new ReplicationQuotaManagerConfig(Long.MAX_VALUE, 11, 1), metrics, QuotaType.LeaderReplication$.MODULE$, time);
        b.replicaManager = new ReplicaManager(config, metrics, time, b.zkUtils, new NoopScheduler(), b.logManager,
            new AtomicBoolean(false), quota, Option.<String>empty());
        b.partition = b.replicaManager.getOrCreatePartition(TP);
    }

    @Override
    protected void stop(Broker b) {
        b.lastSeen = snapshot(b);
        Option<Replica> local = b.partition.getReplica(b.id);
        if (local.isDefined() && local.get().log().isDefined()) {
            local.get().log().get().close(); // no clean-shutdown marker: the next start recovers the log
        }
        b.replicaManager.shutdown(false); // no HW checkpoint: a crash writes nothing
        LogDirs.releaseScalaDirLocks(b.logManager);
        b.zkUtils.zkClient().close();
        b.online = false;
        b.partition = null;
        b.replicaManager = null;
        b.logManager = null;
        b.inbox.clear();
        dropFetcher(b);
    }

    private static void dropFetcher(Broker b) {
        b.fetchOffset = null;
        b.fetchLeader = null;
        b.parked = null;
        b.inFlight = null; // MSG-DROP-1
    }

    /** The leader's conditional ISR write (ReplicationUtils.updateLeaderAndIsr): accepted only at
     * the znode version the controller holds; no LeaderAndIsr follows it. */
    private Tuple2<Object, Object> zkWrite(Broker b, String data, int expectVersion) {
        if (!b.online || expectVersion != ctrlPartitionEpoch) {
            return new Tuple2<>(false, -1);
        }
        try {
            List<Integer> isr = new ArrayList<>();
            for (var id : JSON.readTree(data).get("isr")) {
                isr.add(id.asInt());
            }
            isr.sort(Comparator.naturalOrder());
            ctrlIsr = isr;
        } catch (IOException e) {
            throw new IllegalStateException("unreadable LeaderAndIsr znode data " + data + ": " + e, e);
        }
        ctrlPartitionEpoch += 1;
        return new Tuple2<>(true, ctrlPartitionEpoch);
    }

    private static void writeCheckpoint(Broker b, long hw) {
        Map<TopicPartition, Object> m = Map.of(TP, (Object) hw);
        new OffsetCheckpoint(b.hwCheckpointFile())
            .write(JavaConverters.mapAsScalaMapConverter(m).asScala());
    }

    // ------------------------------------------------------------------ controller

    private PartitionState toKafka(Registration r) {
        List<Integer> replicas = new ArrayList<>();
        for (Broker x : brokers) {
            replicas.add(x.id);
        }
        return new PartitionState(CONTROLLER_EPOCH, r.leader() == null ? -1 : r.leader(), r.leaderEpoch(),
            new ArrayList<>(r.isr()), r.partitionEpoch(), new java.util.HashSet<>(replicas));
    }

    /**
     * The broker handles a LeaderAndIsr as ReplicaManager.becomeLeaderOrFollower does (0.10.2.2):
     * only a newer leader epoch; makeLeaders (Partition.makeLeader, the fetcher removed) or
     * makeFollowers: if the leader is alive, Partition.makeFollower, and when that reports a new
     * leader, the fetcher removed, the log truncated to the HW (LogManager.truncateTo) and a new
     * fetcher at the LEO; without a live leader only the local replica is created.
     */
    @Override
    protected void apply(Broker b, Registration r, boolean isNew) {
        if (!b.online || r.leaderEpoch() <= b.partition.getLeaderEpoch()) {
            return;
        }
        PartitionState state = toKafka(r);
        if (r.leader() != null && r.leader() == b.id) {
            b.partition.makeLeader(CONTROLLER_ID, state, 0);
            dropFetcher(b);
        } else if (r.leader() != null) {
            // makeFollowers tests the leader against the broker's own metadata cache, which the
            // controller's UpdateMetadata requests keep in the order of this channel: a decision
            // was sent while its leader was alive, and a death comes after it (not `down`, the
            // controller's view now: kafka-0.10 candidate 4, a queued LeaderAndIsr applied at an
            // election that had handled its leader's crash).
            if (b.partition.makeFollower(CONTROLLER_ID, state, 0)) {
                dropFetcher(b);
                long hw = b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset();
                truncateTo(b, hw);
                b.fetchOffset = localLog(b).logEndOffset();
                b.fetchLeader = brokers.get(r.leader()).name;
            }
        } else {
            b.partition.getOrCreateReplica(b.id);
        }
        completePendingAt(b);
    }

    private static Log localLog(Broker b) {
        return b.partition.getOrCreateReplica(b.id).log().get();
    }

    // ------------------------------------------------------------------ steps

    /** Error code 6 is NOT_LEADER_FOR_PARTITION in 0.10 and NOT_LEADER_OR_FOLLOWER since 2.6
     * (the same code, renamed); the protocol uses the newer name. */
    private static String errorName(Errors error) {
        return error == Errors.NOT_LEADER_FOR_PARTITION ? "NOT_LEADER_OR_FOLLOWER" : error.name();
    }

    /** The follower's fetcher sends one fetch; the leader handles it as ReplicaManager.fetchMessages
     * (0.10.2.2) does: readFromLocalLog, then Partition.updateReplicaLogReadResult; answered at once
     * or parked (DelayedFetch). */
    @Override
    public void fetch(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        Broker f = broker(name);
        Broker l = followedLeader(f, "FETCH-PRE-1");
        refuseOutstandingFetch(f);
        long waitMs = maxWaitMs != null ? maxWaitMs : fetchWaitMs;
        FetchRequestState request = new FetchRequestState(f, l, f.session, f.fetchOffset,
            time.milliseconds() + waitMs, maxRecords);
        FetchAnswer answer = read(request, true);
        boolean immediate = waitMs <= 0 || answer.error() != Errors.NONE || answer.records().sizeInBytes() > 0;
        answerOrPark(f, request, answer, immediate);
    }

    /** max_records stands for replica.fetch.max.bytes: the bytes of that many records (0.10 batches
     * are single records unless compressed, so no cut can fall inside a batch). */
    private int bytesFor(Broker leader, long fetchOffset, Integer maxRecords) {
        if (maxRecords == null || !leader.online) {
            return MAX_BYTES;
        }
        Log log = localLog(leader);
        if (fetchOffset >= log.logEndOffset()) {
            return MAX_BYTES;
        }
        int bytes = 0;
        int n = 0;
        for (LogEntry entry : log.read(fetchOffset, MAX_BYTES, Option.empty(), true).records().shallowEntries()) {
            if (n >= maxRecords) {
                break;
            }
            bytes += entry.sizeInBytes();
            n += 1;
        }
        return Math.max(bytes, 1);
    }

    @Override
    protected FetchAnswer read(FetchRequestState request, boolean updateFetchState) throws IOException {
        Broker l = request.leader();
        if (!l.online) {
            return new FetchAnswer(request, Errors.NOT_LEADER_FOR_PARTITION, null, MemoryRecords.EMPTY);
        }
        int maxBytes = bytesFor(l, request.fetchOffset(), request.maxRecords());
        List<Tuple2<TopicPartition, FetchRequest.PartitionData>> infos = List.of(
            new Tuple2<>(TP, new FetchRequest.PartitionData(request.fetchOffset(), maxBytes)));
        scala.collection.Seq<Tuple2<TopicPartition, LogReadResult>> results = l.replicaManager.readFromLocalLog(
            request.follower().id, true, false, maxBytes, false,
            JavaConverters.asScalaBufferConverter(infos).asScala(), QuotaFactory.UnboundedQuota$.MODULE$);
        LogReadResult read = results.head()._2();
        Errors error = read.error();
        if (error == Errors.NONE && updateFetchState) {
            l.partition.updateReplicaLogReadResult(request.follower().id, read);
        }
        MemoryRecords records = error == Errors.NONE ? toMemoryRecords(read.info().records()) : MemoryRecords.EMPTY;
        return new FetchAnswer(request, error, read, records);
    }

    private static MemoryRecords toMemoryRecords(Records records) throws IOException {
        if (records instanceof MemoryRecords m) {
            return m;
        }
        ByteBuffer buffer = ByteBuffer.allocate(records.sizeInBytes());
        ((FileRecords) records).readInto(buffer, 0);
        buffer.rewind();
        return MemoryRecords.readableRecords(buffer);
    }

    /** DelayedFetch.tryComplete (0.10.2.2): complete when the leader no longer leads (case A) or
     * its LEO moved from the fetch offset, or at the deadline; onComplete reads again. */
    @Override
    protected boolean fetchReady(FetchRequestState p) {
        Broker l = p.leader();
        return l.partition.leaderReplicaIfLocal().isEmpty()
            || localLog(l).logEndOffset() != p.fetchOffset();
    }

    /** ReplicaFetcherThread (0.10.2.2): an answer to another session is dropped; an error changes
     * nothing; OFFSET_OUT_OF_RANGE goes through handleOffsetOutOfRange; data through
     * processPartitionData (Log.append, HW = min(LEO, leader's HW)). */
    @Override
    protected boolean forCurrentFetch(Broker f, FetchAnswer answer) {
        FetchRequestState req = answer.request();
        return f.fetchOffset != null
            && req.leader().name.equals(f.fetchLeader) && f.fetchOffset == req.fetchOffset();
    }

    @Override
    protected void processFetchAnswer(Broker f, FetchAnswer answer) throws IOException {
        FetchRequestState req = answer.request();
        Broker l = req.leader();
        Replica replica = f.partition.getOrCreateReplica(f.id);
        Log log = replica.log().get();
        if (answer.error() == Errors.OFFSET_OUT_OF_RANGE) {
            if (l.online && l.partition.leaderReplicaIfLocal().isDefined()) {
                Log leaderLog = localLog(l);
                fetchOffsetAndTruncate(f, log.logEndOffset(), leaderLog.logStartOffset(), leaderLog.logEndOffset());
            }
            return;
        }
        if (answer.error() != Errors.NONE) {
            return;
        }
        if (req.fetchOffset() != log.logEndOffset()) {
            throw new IllegalStateException("Offset mismatch for partition " + TP + ": fetched offset = "
                + req.fetchOffset() + ", log end offset = " + log.logEndOffset() + ".");
        }
        log.append(answer.records(), false);
        long followerHw = Math.min(log.logEndOffset(), answer.read().hw());
        replica.highWatermark_$eq(new LogOffsetMetadata(followerHw, -1L, -1));
        f.fetchOffset = log.logEndOffset();
    }

    /** ReplicaFetcherThread.handleOffsetOutOfRange (0.10.2.2): a leader behind the follower with
     * unclean election disabled makes the follower exit (System.exit: the adapter takes the
     * broker down, FOLLOWER-OOR-2). */
    @Override
    protected boolean followerExitsBehindLeader() {
        return !unclean;
    }

    @Override
    protected void truncateTo(Broker f, long offset) {
        f.logManager.truncateTo(JavaConverters.mapAsScalaMapConverter(Map.of(TP, (Object) offset)).asScala());
    }

    @Override
    protected void truncateFullyAndStartAt(Broker f, long offset) {
        f.logManager.truncateFullyAndStartAt(TP, offset);
    }

    // ------------------------------------------------------------------ time

    /** ReplicaManager.checkpointHighWatermarks for this broker's one partition. */
    @Override
    protected void checkpoint(Broker b) {
        if (!b.online) {
            return;
        }
        writeCheckpoint(b, b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset());
    }

    // ------------------------------------------------------------------ observation

    private Snapshot snapshot(Broker b) {
        Replica replica = b.partition.getOrCreateReplica(b.id);
        Log log = replica.log().get();
        List<String> records = new ArrayList<>();
        long offset = log.logStartOffset();
        while (offset < log.logEndOffset()) {
            FetchDataInfo info = log.read(offset, MAX_BYTES, Option.empty(), true);
            long before = offset;
            for (LogEntry entry : info.records().deepEntries()) {
                Record record = entry.record();
                records.add(text(record.value()) + "@" + text(record.key()));
                offset = entry.offset() + 1;
            }
            if (offset == before) {
                break;
            }
        }
        Option<Object> leaderId = b.partition.leaderReplicaIdOpt();
        String leader = leaderId.isDefined() && (Integer) leaderId.get() >= 0
            ? brokers.get((Integer) leaderId.get()).name : null;
        return new Snapshot(records, 0L, log.logEndOffset(), replica.highWatermark().messageOffset(), List.of(),
            leader, b.partition.getLeaderEpoch());
    }

    private static String text(ByteBuffer bytes) {
        if (bytes == null) {
            return "";
        }
        byte[] out = new byte[bytes.remaining()];
        bytes.duplicate().get(out);
        return new String(out, StandardCharsets.UTF_8);
    }

    @Override
    protected long readHwCheckpoint(File file) {
        Option<Object> hw = new OffsetCheckpoint(file).read().get(TP);
        return hw.isDefined() ? (Long) hw.get() : 0L;
    }

    // ------------------------------------------------------------------ ClusterCore's hooks

    /** CTRL-FAIL-2 (0.10): the last ISR member stays only while unclean election is disabled. */
    @Override
    protected boolean keepsLastIsrMember() {
        return !unclean;
    }

    /** The key carries the epoch the leader appends in (0.10 records have none): Kafka
     * replicates and truncates it with the value. */
    @Override
    protected long appendAsLeader(Broker leader, List<String> values, int requiredAcks) throws KafkaError {
        byte[] key = Integer.toString(leader.partition.getLeaderEpoch()).getBytes(StandardCharsets.UTF_8);
        Record[] records = values.stream()
            .map(v -> Record.create(Record.MAGIC_VALUE_V1, time.milliseconds(), key, v.getBytes(StandardCharsets.UTF_8)))
            .toArray(Record[]::new);
        try {
            LogAppendInfo info = leader.partition.appendRecordsToLeader(
                MemoryRecords.withRecords(CompressionType.NONE, records), requiredAcks);
            return info.lastOffset() + 1;
        } catch (org.apache.kafka.common.errors.ApiException e) {
            throw new KafkaError(errorName(Errors.forException(e)));
        }
    }

    @Override
    protected String ackOutcome(Broker leader, long requiredOffset) {
        Tuple2<Object, Errors> answer = leader.partition.checkEnoughReplicasReachOffset(requiredOffset);
        return ackOutcome((Boolean) answer._1(), answer._2() == Errors.NONE ? null : errorName(answer._2()));
    }

    @Override
    protected void shrinkIsr(Broker b) {
        b.partition.maybeShrinkIsr(lagMs);
    }

    @Override
    protected boolean checkpointBehind(Broker b) {
        return b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset() != checkpointedHw(b);
    }

    @Override
    protected ReplicaView view(Broker b) {
        Snapshot s = b.online ? snapshot(b) : b.lastSeen;
        boolean leads = b.online && b.partition.leaderReplicaIfLocal().isDefined();
        String role = !b.online ? "none" : leads ? "leader" : b.fetchOffset != null ? "follower" : "none";
        Map<String, Object> remote = null;
        if (leads) {
            remote = remoteLeos(b, other -> {
                Option<Replica> replica = b.partition.getReplica(other.id);
                return replica.isDefined() ? replica.get().logEndOffset().messageOffset() : -1L;
            });
        }
        // 0.10 keeps no leader-epoch cache (KIP-101 came in 0.11) and never truncates before fetching
        return new ReplicaView(b.online, role, s.leader(), s.leaderEpoch(), s.leo(), s.hw(), checkpointedHw(b), s.log(),
            List.of(), "fetching", 0L, remote);
    }

    @Override
    protected void releaseGlobals() {
        com.yammer.metrics.core.MetricsRegistry registry = com.yammer.metrics.Metrics.defaultRegistry();
        for (com.yammer.metrics.core.MetricName metric : List.copyOf(registry.allMetrics().keySet())) {
            registry.removeMetric(metric);
        }
    }

    @Override
    protected String leaderFollowed(Broker f) {
        return f.fetchLeader;
    }
}
