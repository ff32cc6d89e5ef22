package kconform.kafka010;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
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
final class Cluster implements AutoCloseable {
    static final String TOPIC = "kconform";
    static final TopicPartition TP = new TopicPartition(TOPIC, 0);
    private static final int MAX_BYTES = 1 << 20;
    private static final int CONTROLLER_ID = 1000;
    private static final int CONTROLLER_EPOCH = 1;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A refused step: the precondition of a spec rule does not hold. */
    static final class Rejected extends Exception {
        final String rule;

        Rejected(String rule, String reason) {
            super(reason);
            this.rule = rule;
        }
    }

    /** A follower's fetch as the leader received it. */
    record FetchRequestState(Broker follower, Broker leader, int incarnation, long fetchOffset, long deadlineMs,
                             Integer maxRecords) {
    }

    /** The leader's answer (ReplicaManager's LogReadResult) and the records it carries. */
    record FetchAnswer(FetchRequestState request, Errors error, LogReadResult read, MemoryRecords records) {
    }

    private record PendingProduce(String id, Broker leader, long requiredOffset, long deadlineMs) {
    }

    private final ManualTime time = new ManualTime();
    private final File root;
    private final List<Broker> brokers = new ArrayList<>();
    private final Map<String, Broker> byName = new LinkedHashMap<>();
    private final int minIsr;
    private final boolean unclean;
    private final long lagMs;
    private final long checkpointIntervalMs;
    private final long requestTimeoutMs;
    private final long fetchWaitMs;

    // The ZooKeeper controller: the partition's znode (leader, leader epoch, ISR, zkVersion).
    private Integer ctrlLeader;
    private int ctrlEpoch;
    private int ctrlZkVersion;
    private List<Integer> ctrlIsr;
    private final Set<Integer> down = new TreeSet<>();

    private final Map<String, String> producer = new LinkedHashMap<>();
    private final List<PendingProduce> pending = new ArrayList<>();

    Cluster(Map<String, Object> config) throws IOException {
        @SuppressWarnings("unchecked")
        List<String> names = (List<String>) config.get("replicas");
        minIsr = ((Number) config.get("min_insync_replicas")).intValue();
        unclean = Boolean.TRUE.equals(config.get("unclean_leader_election"));
        lagMs = ((Number) config.get("replica_lag_time_max_ms")).longValue();
        checkpointIntervalMs = ((Number) config.get("replica_high_watermark_checkpoint_interval_ms")).longValue();
        requestTimeoutMs = ((Number) config.get("request_timeout_ms")).longValue();
        fetchWaitMs = ((Number) config.get("replica_fetch_wait_max_ms")).longValue();
        root = Files.createTempDirectory("kconform-kafka010-").toFile();
        for (int i = 0; i < names.size(); i++) {
            Broker b = new Broker(names.get(i), i, new File(root, names.get(i)));
            brokers.add(b);
            byName.put(b.name, b);
        }
        String first = (String) config.get("initial_leader");
        Broker leader = first == null ? brokers.get(0) : broker(first);
        ctrlLeader = leader.id;
        ctrlEpoch = 0;
        ctrlZkVersion = 0;
        ctrlIsr = new ArrayList<>();
        for (Broker b : brokers) {
            ctrlIsr.add(b.id);
        }
        for (Broker b : brokers) {
            start(b);
        }
        for (Broker b : brokers) {
            apply(b, registration());
        }
        afterStep();
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
        props.put("replica.fetch.wait.max.ms", Long.toString(fetchWaitMs));
        props.put("replica.high.watermark.checkpoint.interval.ms", Long.toString(Math.max(checkpointIntervalMs, 1)));
        props.put("log.message.format.version", "0.10.2");
        return props;
    }

    private void start(Broker b) throws IOException {
        b.online = true;
        b.incarnation += 1;
        b.startedMs = time.milliseconds();
        b.fetchOffset = null;
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

    private void stop(Broker b) {
        b.lastSeen = snapshot(b);
        Option<Replica> local = b.partition.getReplica(b.id);
        if (local.isDefined() && local.get().log().isDefined()) {
            local.get().log().get().close(); // no clean-shutdown marker: the next start recovers the log
        }
        b.replicaManager.shutdown(false); // no HW checkpoint: a crash writes nothing
        releaseDirLocks(b.logManager);
        b.zkUtils.zkClient().close();
        b.online = false;
        b.partition = null;
        b.replicaManager = null;
        b.logManager = null;
        b.inbox.clear();
        dropFetcher(b);
    }

    /** LogManager locks its directory (a file lock, per JVM); a crashed process holds none. */
    private static void releaseDirLocks(LogManager manager) {
        try {
            for (Field f : LogManager.class.getDeclaredFields()) {
                if (f.getName().endsWith("dirLocks")) {
                    f.setAccessible(true);
                    scala.collection.Iterable<?> locks = (scala.collection.Iterable<?>) f.get(manager);
                    for (Object lock : JavaConverters.asJavaIterableConverter(locks).asJava()) {
                        ((kafka.utils.FileLock) lock).destroy();
                    }
                    return;
                }
            }
            throw new IllegalStateException("LogManager has no dirLocks field in this Kafka version");
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("cannot release LogManager's directory locks: " + e, e);
        }
    }

    private static void dropFetcher(Broker b) {
        b.fetchOffset = null;
        b.fetchLeader = null;
        b.parked = null;
        b.inFlight = null; // MSG-DROP-1
    }

    @Override
    public void close() {
        for (Broker b : brokers) {
            if (b.online) {
                stop(b);
            }
        }
        deleteRecursively(root);
        com.yammer.metrics.core.MetricsRegistry registry = com.yammer.metrics.Metrics.defaultRegistry();
        for (com.yammer.metrics.core.MetricName metric : List.copyOf(registry.allMetrics().keySet())) {
            registry.removeMetric(metric);
        }
    }

    private static void deleteRecursively(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteRecursively(c);
            }
        }
        f.delete();
    }

    /** The leader's conditional ISR write (ReplicationUtils.updateLeaderAndIsr): accepted only at
     * the znode version the controller holds; no LeaderAndIsr follows it. */
    private Tuple2<Object, Object> zkWrite(Broker b, String data, int expectVersion) {
        if (!b.online || expectVersion != ctrlZkVersion) {
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
        ctrlZkVersion += 1;
        return new Tuple2<>(true, ctrlZkVersion);
    }

    private static void writeCheckpoint(Broker b, long hw) {
        Map<TopicPartition, Object> m = Map.of(TP, (Object) hw);
        new OffsetCheckpoint(new File(b.dir, "replication-offset-checkpoint"))
            .write(JavaConverters.mapAsScalaMapConverter(m).asScala());
    }

    // ------------------------------------------------------------------ controller

    private Broker.Registration registration() {
        return new Broker.Registration(ctrlLeader, ctrlEpoch, ctrlZkVersion, List.copyOf(ctrlIsr));
    }

    private PartitionState toKafka(Broker.Registration r) {
        List<Integer> replicas = new ArrayList<>();
        for (Broker x : brokers) {
            replicas.add(x.id);
        }
        return new PartitionState(CONTROLLER_EPOCH, r.leader() == null ? -1 : r.leader(), r.leaderEpoch(),
            new ArrayList<>(r.isr()), r.zkVersion(), new java.util.HashSet<>(replicas));
    }

    /**
     * The broker handles a LeaderAndIsr as ReplicaManager.becomeLeaderOrFollower does (0.10.2.2):
     * only a newer leader epoch; makeLeaders (Partition.makeLeader, the fetcher removed) or
     * makeFollowers: if the leader is alive, Partition.makeFollower, and when that reports a new
     * leader, the fetcher removed, the log truncated to the HW (LogManager.truncateTo) and a new
     * fetcher at the LEO; without a live leader only the local replica is created.
     */
    private void apply(Broker b, Broker.Registration r) {
        if (!b.online || r.leaderEpoch() <= b.partition.getLeaderEpoch()) {
            return;
        }
        PartitionState state = toKafka(r);
        if (r.leader() != null && r.leader() == b.id) {
            b.partition.makeLeader(CONTROLLER_ID, state, 0);
            dropFetcher(b);
        } else if (r.leader() != null && !down.contains(r.leader())) {
            if (b.partition.makeFollower(CONTROLLER_ID, state, 0)) {
                dropFetcher(b);
                long hw = b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset();
                b.logManager.truncateTo(JavaConverters.mapAsScalaMapConverter(Map.of(TP, (Object) hw)).asScala());
                b.fetchOffset = localLog(b).logEndOffset();
                b.fetchLeader = brokers.get(r.leader()).name;
            }
        } else {
            b.partition.getOrCreateReplica(b.id);
        }
        for (PendingProduce p : List.copyOf(pending)) {
            if (p.leader() == b) {
                completeIfDone(p);
            }
        }
    }

    private static Log localLog(Broker b) {
        return b.partition.getOrCreateReplica(b.id).log().get();
    }

    private void publish(List<String> notify) {
        Broker.Registration r = registration();
        for (Broker b : brokers) {
            if (!b.online) {
                continue;
            }
            if (notify == null || notify.contains(b.name)) {
                while (!b.inbox.isEmpty()) {
                    apply(b, b.inbox.poll());
                }
                apply(b, r);
            } else {
                b.inbox.add(r);
            }
        }
    }

    private List<Integer> liveIsr() {
        List<Integer> out = new ArrayList<>();
        for (int id : ctrlIsr) {
            if (brokers.get(id).online) {
                out.add(id);
            }
        }
        return out;
    }

    /** OfflinePartitionLeaderSelector (0.10): first live ISR member, else (unclean) first live replica. */
    private boolean offlineElection() {
        List<Integer> live = liveIsr();
        if (!live.isEmpty()) {
            ctrlLeader = live.get(0);
            ctrlIsr = live;
        } else if (unclean && brokers.stream().anyMatch(x -> x.online)) {
            Broker first = brokers.stream().filter(x -> x.online).findFirst().orElseThrow();
            ctrlLeader = first.id;
            ctrlIsr = List.of(first.id);
        } else {
            return false;
        }
        ctrlEpoch += 1;
        ctrlZkVersion += 1;
        return true;
    }

    /** KafkaController.removeReplicaFromIsr (0.10.1: "increment the leader epoch even if the ISR
     * changes"); the last member stays only while unclean election is disabled (CTRL-FAIL-2, 0.10). */
    private void removeFromIsr(int id) {
        if (!ctrlIsr.contains(id)) {
            return;
        }
        List<Integer> isr = new ArrayList<>(ctrlIsr);
        isr.remove(Integer.valueOf(id));
        if (isr.isEmpty() && !unclean) {
            isr = ctrlIsr;
        }
        ctrlLeader = ctrlLeader != null && ctrlLeader == id ? null : ctrlLeader;
        ctrlIsr = isr;
        ctrlEpoch += 1;
        ctrlZkVersion += 1;
    }

    private List<Integer> unhandledFailures() {
        List<Integer> out = new ArrayList<>();
        for (Broker b : brokers) {
            if (!b.online && !down.contains(b.id)) {
                out.add(b.id);
            }
        }
        return out;
    }

    private void handleFailures(List<String> notify) {
        List<Integer> dead = unhandledFailures();
        int epochBefore = ctrlEpoch;
        Integer leaderBefore = ctrlLeader;
        down.addAll(dead);
        boolean elected = false;
        if (leaderBefore == null || dead.contains(leaderBefore)) {
            elected = offlineElection();
        }
        if (!elected) {
            for (int id : dead) {
                removeFromIsr(id);
            }
        }
        if (ctrlEpoch != epochBefore) {
            publish(notify);
        }
    }

    void elect(String leader, List<String> notify) throws Rejected {
        if (notify != null) {
            for (String n : notify) {
                if (!byName.containsKey(n)) {
                    throw new Rejected("CTRL-ELECT-5", "elect.notify: unknown replica " + n);
                }
            }
        }
        if (leader == null) {
            boolean leaderAlive = ctrlLeader != null && brokers.get(ctrlLeader).online;
            List<Integer> dead = unhandledFailures();
            if (ctrlLeader != null && dead.isEmpty() && leaderAlive) {
                throw new Rejected("CTRL-ELECT-PRE-1", "elect: the leader " + brokers.get(ctrlLeader).name
                    + " is alive and no broker failure is pending; name a leader for a controlled election");
            }
            if (!dead.isEmpty()) {
                handleFailures(notify);
                return;
            }
            if (offlineElection()) {
                publish(notify);
            }
            return;
        }
        Broker x = byName.get(leader);
        if (x == null) {
            throw new Rejected("CTRL-ELECT-4", "elect: unknown replica " + leader);
        }
        if (!x.online) {
            throw new Rejected("CTRL-ELECT-4", "elect: replica " + leader + " is offline");
        }
        if (!ctrlIsr.contains(x.id)) {
            throw new Rejected("CTRL-ELECT-4", "elect: replica " + leader + " is not in the ISR");
        }
        ctrlLeader = x.id;
        ctrlEpoch += 1;
        ctrlZkVersion += 1;
        publish(notify);
    }

    void deliverLeaderAndIsr(String name) throws Rejected {
        Broker b = broker(name);
        if (b.inbox.isEmpty()) {
            throw new Rejected("LAI-PRE-1", "deliver_leader_and_isr: none is in flight to " + name);
        }
        apply(b, b.inbox.poll());
    }

    // ------------------------------------------------------------------ steps

    Broker broker(String name) {
        Broker b = byName.get(name);
        if (b == null) {
            throw new IllegalArgumentException("unknown replica " + name + " (replicas: " + byName.keySet() + ")");
        }
        return b;
    }

    void produce(String id, List<String> values, String acks, String to) throws Rejected {
        if (producer.containsKey(id)) {
            throw new Rejected("PRODUCE-PRE-1", "produce id " + id + " was used before");
        }
        if (to != null && !byName.containsKey(to)) {
            throw new Rejected("PRODUCE-PRE-1", "produce.to: unknown replica " + to);
        }
        boolean ackAll = "all".equals(acks) || "-1".equals(acks);
        boolean ack0 = "0".equals(acks);
        String status;
        Broker target = to != null ? byName.get(to) : ctrlLeader == null ? null : brokers.get(ctrlLeader);
        if (target == null) {
            status = "LEADER_NOT_AVAILABLE";
        } else if (!target.online) {
            status = "NETWORK_EXCEPTION";
        } else {
            // The key carries the epoch the leader appends in (0.10 records have none): Kafka
            // replicates and truncates it with the value.
            byte[] key = Integer.toString(target.partition.getLeaderEpoch()).getBytes(StandardCharsets.UTF_8);
            Record[] records = values.stream()
                .map(v -> Record.create(Record.MAGIC_VALUE_V1, time.milliseconds(), key, v.getBytes(StandardCharsets.UTF_8)))
                .toArray(Record[]::new);
            try {
                LogAppendInfo info = target.partition.appendRecordsToLeader(
                    MemoryRecords.withRecords(CompressionType.NONE, records), ackAll ? -1 : ack0 ? 0 : 1);
                if (ackAll) {
                    PendingProduce p = new PendingProduce(id, target, info.lastOffset() + 1,
                        time.milliseconds() + requestTimeoutMs);
                    pending.add(p);
                    producer.put(id, "pending");
                    completeIfDone(p);
                    status = producer.get(id);
                } else {
                    status = "acked";
                }
            } catch (org.apache.kafka.common.errors.ApiException e) {
                status = errorName(Errors.forException(e));
            }
        }
        producer.put(id, ack0 ? "sent" : status);
    }

    private void completeIfDone(PendingProduce p) {
        if (!pending.contains(p)) {
            return;
        }
        Broker b = p.leader();
        Errors error;
        boolean done;
        if (!b.online || b.partition == null) {
            error = Errors.NETWORK_EXCEPTION;
            done = true;
        } else {
            Tuple2<Object, Errors> answer = b.partition.checkEnoughReplicasReachOffset(p.requiredOffset());
            done = (Boolean) answer._1() || answer._2() != Errors.NONE;
            error = answer._2();
        }
        if (done) {
            pending.remove(p);
            producer.put(p.id(), error == Errors.NONE ? "acked" : errorName(error));
        }
    }

    /** Error code 6 is NOT_LEADER_FOR_PARTITION in 0.10 and NOT_LEADER_OR_FOLLOWER since 2.6
     * (the same code, renamed); the protocol uses the newer name. */
    private static String errorName(Errors error) {
        return error == Errors.NOT_LEADER_FOR_PARTITION ? "NOT_LEADER_OR_FOLLOWER" : error.name();
    }

    private void completeAllPending() {
        for (PendingProduce p : List.copyOf(pending)) {
            completeIfDone(p);
        }
    }

    void fetchRound(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        fetch(name, maxWaitMs, maxRecords);
        if (broker(name).inFlight != null) {
            deliverFetch(name);
        }
    }

    /** The follower's fetcher sends one fetch; the leader handles it as ReplicaManager.fetchMessages
     * (0.10.2.2) does: readFromLocalLog, then Partition.updateReplicaLogReadResult; answered at once
     * or parked (DelayedFetch). */
    void fetch(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        Broker f = broker(name);
        if (!f.online) {
            throw new Rejected("FETCH-PRE-1", name + " is offline");
        }
        if (f.fetchOffset == null) {
            throw new Rejected("FETCH-PRE-1", name + " does not follow a leader");
        }
        Broker l = byName.get(f.fetchLeader);
        if (!l.online) {
            throw new Rejected("FETCH-PRE-1", name + " follows " + f.fetchLeader + ", which is offline");
        }
        if (f.parked != null || f.inFlight != null) {
            throw new Rejected("FETCH-PRE-1", name + " already has a fetch outstanding");
        }
        long waitMs = maxWaitMs != null ? maxWaitMs : fetchWaitMs;
        FetchRequestState request = new FetchRequestState(f, l, f.incarnation, f.fetchOffset,
            time.milliseconds() + waitMs, maxRecords);
        FetchAnswer answer = read(request, true);
        completeAllPending();
        boolean immediate = waitMs <= 0 || answer.error() != Errors.NONE || answer.records().sizeInBytes() > 0;
        if (immediate) {
            f.inFlight = answer;
        } else {
            f.parked = request;
        }
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

    private FetchAnswer read(FetchRequestState request, boolean updateFetchState) throws IOException {
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
    private void completeParked(boolean deadlinesOnly) {
        for (Broker f : brokers) {
            FetchRequestState p = f.parked;
            if (p == null) {
                continue;
            }
            Broker l = p.leader();
            if (!l.online) {
                f.parked = null;
                continue;
            }
            boolean due = time.milliseconds() >= p.deadlineMs();
            boolean ready = !deadlinesOnly && (l.partition.leaderReplicaIfLocal().isEmpty()
                || localLog(l).logEndOffset() != p.fetchOffset());
            if (due || ready) {
                f.parked = null;
                try {
                    FetchAnswer answer = read(p, false);
                    if (f.online && f.incarnation == p.incarnation()) {
                        f.inFlight = answer;
                    }
                } catch (IOException e) {
                    throw new IllegalStateException("reading the leader's log failed: " + e, e);
                }
            }
        }
    }

    /** ReplicaFetcherThread (0.10.2.2): an answer to another session is dropped; an error changes
     * nothing; OFFSET_OUT_OF_RANGE goes through handleOffsetOutOfRange; data through
     * processPartitionData (Log.append, HW = min(LEO, leader's HW)). */
    void deliverFetch(String name) throws Rejected, IOException {
        Broker f = broker(name);
        FetchAnswer answer = f.inFlight;
        if (answer == null) {
            throw new Rejected("FETCH-DELIVER-PRE-1", "deliver_fetch: no fetch response is in flight to " + name);
        }
        f.inFlight = null;
        FetchRequestState req = answer.request();
        if (!f.online || f.incarnation != req.incarnation() || f.fetchOffset == null
            || !req.leader().name.equals(f.fetchLeader) || f.fetchOffset != req.fetchOffset()) {
            return;
        }
        Broker l = req.leader();
        Replica replica = f.partition.getOrCreateReplica(f.id);
        Log log = replica.log().get();
        if (answer.error() == Errors.OFFSET_OUT_OF_RANGE) {
            if (l.online && l.partition.leaderReplicaIfLocal().isDefined()) {
                outOfRange(f, l, log);
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

    /** ReplicaFetcherThread.handleOffsetOutOfRange (0.10.2.2), the leader's offsets folded in: a
     * leader behind the follower with unclean election disabled makes the follower exit
     * (System.exit: the adapter takes the broker down, FOLLOWER-OOR-2), else it truncates to it. */
    private void outOfRange(Broker f, Broker l, Log log) {
        Log leaderLog = localLog(l);
        long leaderEnd = leaderLog.logEndOffset();
        if (leaderEnd < log.logEndOffset()) {
            if (!unclean) {
                stop(f);
                completeAllPending();
                return;
            }
            f.logManager.truncateTo(JavaConverters.mapAsScalaMapConverter(Map.of(TP, (Object) leaderEnd)).asScala());
            f.fetchOffset = leaderEnd;
            return;
        }
        long leaderStart = leaderLog.logStartOffset();
        if (leaderStart > log.logEndOffset()) {
            f.logManager.truncateFullyAndStartAt(TP, leaderStart);
        }
        f.fetchOffset = Math.max(leaderStart, log.logEndOffset());
    }

    void isrExpiration(String name) throws Rejected {
        Broker b = broker(name);
        if (!b.online) {
            throw new Rejected("ISR-SHRINK-PRE-1", name + " is offline");
        }
        b.partition.maybeShrinkIsr(lagMs);
        completeAllPending();
    }

    void crash(String name) throws Rejected {
        Broker b = broker(name);
        if (!b.online) {
            throw new Rejected("CRASH-PRE-1", name + " is already offline");
        }
        stop(b);
        completeAllPending();
    }

    void restart(String name) throws Rejected, IOException {
        Broker b = broker(name);
        if (b.online) {
            throw new Rejected("RESTART-PRE-1", name + " is online");
        }
        if (!down.contains(b.id) && ctrlLeader != null && ctrlLeader == b.id) {
            handleFailures(null); // RESTART-2
        }
        down.remove(b.id);
        start(b);
        apply(b, registration());
    }

    // ------------------------------------------------------------------ time

    private record Timer(long atMs, int order, Runnable action) {
    }

    /** TICK-1: parked-fetch and produce deadlines, isr-expiration (every replica.lag.time.max.ms / 2
     * from the broker's start), HW checkpoints, in time order. */
    void tick(long ms) {
        long from = time.milliseconds();
        long to = from + ms;
        List<Timer> timers = new ArrayList<>();
        for (PendingProduce p : pending) {
            if (p.deadlineMs() > from && p.deadlineMs() <= to) {
                timers.add(new Timer(p.deadlineMs(), 1, () -> {
                    if (pending.remove(p)) {
                        producer.put(p.id(), Errors.REQUEST_TIMED_OUT.name());
                    }
                }));
            }
        }
        for (Broker f : brokers) {
            FetchRequestState p = f.parked;
            if (p != null && p.deadlineMs() > from && p.deadlineMs() <= to) {
                timers.add(new Timer(p.deadlineMs(), 0, () -> completeParked(true)));
            }
        }
        for (Broker b : brokers) {
            if (!b.online) {
                continue;
            }
            addPeriodic(timers, b.startedMs, lagMs / 2, from, to, 2, () -> {
                if (b.online) {
                    b.partition.maybeShrinkIsr(lagMs);
                }
            });
            if (checkpointIntervalMs > 0) {
                addPeriodic(timers, b.startedMs, checkpointIntervalMs, from, to, 3, () -> checkpoint(b));
            }
        }
        timers.sort(Comparator.comparingLong(Timer::atMs).thenComparingInt(Timer::order));
        for (Timer t : timers) {
            time.set(t.atMs());
            t.action().run();
            completeAllPending();
        }
        time.set(to);
    }

    private static void addPeriodic(List<Timer> out, long startMs, long periodMs, long from, long to, int order,
                                    Runnable action) {
        if (periodMs <= 0) {
            return;
        }
        long k = Math.max(1, (from - startMs) / periodMs + 1);
        for (long at = startMs + k * periodMs; at <= to; at += periodMs) {
            if (at > from) {
                out.add(new Timer(at, order, action));
            }
        }
    }

    /** ReplicaManager.checkpointHighWatermarks for this broker's one partition. */
    private void checkpoint(Broker b) {
        if (!b.online) {
            return;
        }
        writeCheckpoint(b, b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset());
    }

    void afterStep() {
        completeParked(false);
        completeAllPending();
        if (checkpointIntervalMs == 0) {
            for (Broker b : brokers) {
                if (b.online && b.partition.getOrCreateReplica(b.id).highWatermark().messageOffset() != readCheckpoint(b)) {
                    checkpoint(b);
                }
            }
        }
    }

    // ------------------------------------------------------------------ observation

    private Broker.Snapshot snapshot(Broker b) {
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
        return new Broker.Snapshot(records, log.logEndOffset(), replica.highWatermark().messageOffset(), leader,
            b.partition.getLeaderEpoch());
    }

    private static String text(ByteBuffer bytes) {
        if (bytes == null) {
            return "";
        }
        byte[] out = new byte[bytes.remaining()];
        bytes.duplicate().get(out);
        return new String(out, StandardCharsets.UTF_8);
    }

    Map<String, Object> observe() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("clock_ms", time.milliseconds() - ManualTime.ORIGIN_MS);
        out.put("leader", ctrlLeader == null ? null : brokers.get(ctrlLeader).name);
        out.put("leader_epoch", ctrlEpoch);
        List<String> isr = new ArrayList<>();
        for (Broker b : brokers) {
            if (ctrlIsr.contains(b.id)) {
                isr.add(b.name);
            }
        }
        out.put("isr", isr);
        out.put("partition_epoch", ctrlZkVersion);
        Map<String, Object> replicas = new LinkedHashMap<>();
        for (Broker b : brokers) {
            replicas.put(b.name, observe(b));
        }
        out.put("replicas", replicas);
        out.put("producer", new LinkedHashMap<>(producer));
        return out;
    }

    private Map<String, Object> observe(Broker b) {
        Map<String, Object> r = new LinkedHashMap<>();
        Broker.Snapshot s = b.online ? snapshot(b) : b.lastSeen;
        boolean leads = b.online && b.partition.leaderReplicaIfLocal().isDefined();
        String role = !b.online ? "none" : leads ? "leader" : b.fetchOffset != null ? "follower" : "none";
        r.put("online", b.online);
        r.put("role", role);
        r.put("leader", s.leader());
        r.put("leader_epoch", s.leaderEpoch());
        r.put("leo", s.leo());
        r.put("hw", s.hw());
        r.put("checkpoint_hw", readCheckpoint(b));
        r.put("log", s.log());
        r.put("epoch_cache", List.of()); // 0.10 keeps no leader-epoch cache (KIP-101 came in 0.11)
        r.put("fetch_state", "fetching");
        r.put("log_start", 0L);
        if (leads) {
            Map<String, Object> remote = new LinkedHashMap<>();
            for (Broker other : brokers) {
                if (other == b) {
                    continue;
                }
                Option<Replica> replica = b.partition.getReplica(other.id);
                long leo = replica.isDefined() ? replica.get().logEndOffset().messageOffset() : -1L;
                remote.put(other.name, leo < 0 ? null : leo);
            }
            r.put("remote_leo", remote);
        }
        return r;
    }

    private long readCheckpoint(Broker b) {
        File file = new File(b.dir, "replication-offset-checkpoint");
        if (!file.exists()) {
            return 0L;
        }
        Option<Object> hw = new OffsetCheckpoint(file).read().get(TP);
        return hw.isDefined() ? (Long) hw.get() : 0L;
    }
}
