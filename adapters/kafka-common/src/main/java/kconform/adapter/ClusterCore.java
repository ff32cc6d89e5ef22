package kconform.adapter;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.ToLongFunction;

/**
 * The version-neutral half of one partition replicated on a few simulated brokers: the
 * controller's record of the partition (leader, leader epoch, partition epoch, ISR) and its
 * elections, the brokers' queues of controller decisions, the producer's pending acks=all
 * requests, the timers a {@code tick} fires, and the observation. None of it calls Kafka.
 *
 * Each Kafka line's {@code Cluster} extends this and implements the hooks with its Kafka's
 * own classes: starting and stopping a broker, applying a decision (makeLeader/makeFollower),
 * the leader's append and its acks=all check, the fetch path, ISR expiry, the HW checkpoint
 * and reading a replica's state. Where the generations' controllers differ (ZooKeeper vs
 * KRaft), the difference is a documented hook ({@link #keepsLastIsrMember},
 * {@link #isrRemovalIsNewLeaderEpoch}, {@link #publishIsrChange}).
 *
 * @param <B> the line's broker
 * @param <R> the line's fetch request (as the leader received it)
 * @param <A> the line's fetch answer
 * @param <T> the line's clock (a ManualClock that implements its Kafka's Time)
 */
public abstract class ClusterCore<B extends BrokerCore<R, A>, R extends FollowerFetch, A extends FollowerAnswer<R>,
    T extends ManualClock>
    implements AutoCloseable {
    /** Makes a line's broker; called once per replica by the constructor. */
    @FunctionalInterface
    public interface BrokerFactory<B> {
        B create(String name, int id, File dir);
    }

    /** An acks=all produce waiting at its leader (DelayedProduce). */
    private record PendingProduce<B>(String id, B leader, long requiredOffset, long deadlineMs) {
    }

    private record Timer(long atMs, int order, Runnable action) {
    }

    /** A broker's OffsetsForLeaderEpoch answer: an error's name (null for none), the epoch and its end offset. */
    public record EpochEnd(String error, int leaderEpoch, long endOffset) {
    }

    protected final T time;
    protected final File root;
    protected final List<B> brokers = new ArrayList<>();
    protected final Map<String, B> byName = new LinkedHashMap<>();
    protected final int minIsr;
    protected final boolean unclean;
    protected final long lagMs;
    protected final long checkpointIntervalMs;
    protected final long requestTimeoutMs;
    protected final long fetchWaitMs;

    // The controller's record of the partition (the ZooKeeper znode, or KRaft's PartitionRecord).
    protected Integer ctrlLeader;
    protected int ctrlEpoch;
    /** KRaft's partition epoch, or the znode's zkVersion on the ZooKeeper lines. */
    protected int ctrlPartitionEpoch;
    protected List<Integer> ctrlIsr;
    /** The brokers whose failure the controller has handled (onBrokerFailure ran). */
    protected final Set<Integer> down = new TreeSet<>();

    private final Map<String, String> producer = new LinkedHashMap<>();
    private final List<PendingProduce<B>> pending = new ArrayList<>();
    /** The last epoch_query's answer (lines that answer it), null before the first. */
    protected Map<String, Object> epochQuery;

    /** Reads the reset's config (spec/adapter-protocol.md "reset") and makes the brokers; the
     * line's constructor then starts them. */
    protected ClusterCore(Map<String, Object> config, T time, String dirPrefix, BrokerFactory<B> newBroker)
        throws IOException {
        this.time = time;
        @SuppressWarnings("unchecked")
        List<String> names = (List<String>) config.get("replicas");
        minIsr = ((Number) config.get("min_insync_replicas")).intValue();
        unclean = Boolean.TRUE.equals(config.get("unclean_leader_election"));
        lagMs = ((Number) config.get("replica_lag_time_max_ms")).longValue();
        checkpointIntervalMs = ((Number) config.get("replica_high_watermark_checkpoint_interval_ms")).longValue();
        requestTimeoutMs = ((Number) config.get("request_timeout_ms")).longValue();
        fetchWaitMs = ((Number) config.get("replica_fetch_wait_max_ms")).longValue();
        root = Files.createTempDirectory(dirPrefix).toFile();
        for (int i = 0; i < names.size(); i++) {
            B b = newBroker.create(names.get(i), i, new File(root, names.get(i)));
            brokers.add(b);
            byName.put(b.name, b);
        }
    }

    /** A new partition: the config's initial leader (else the first replica), epoch 0, every replica in the ISR. */
    private void newPartition(String initialLeader) {
        B leader = initialLeader == null ? brokers.get(0) : broker(initialLeader);
        ctrlLeader = leader.id;
        ctrlEpoch = 0;
        ctrlPartitionEpoch = 0;
        ctrlIsr = new ArrayList<>();
        for (B b : brokers) {
            ctrlIsr.add(b.id);
        }
    }

    /** The controller's record from a given state (protocol 3: "reset" with "initial"). */
    @SuppressWarnings("unchecked")
    private void givenPartition(Map<String, Object> initial) {
        String leaderName = (String) initial.get("leader");
        ctrlLeader = leaderName == null ? null : broker(leaderName).id;
        ctrlEpoch = ((Number) initial.get("leader_epoch")).intValue();
        ctrlPartitionEpoch = ((Number) initial.get("partition_epoch")).intValue();
        List<String> isrNames = (List<String>) initial.get("isr");
        ctrlIsr = new ArrayList<>();
        for (B b : brokers) {
            if (isrNames.contains(b.name)) {
                ctrlIsr.add(b.id);
            }
        }
    }

    // ------------------------------------------------------------------ the line's hooks

    /** The broker goes down: Kafka's objects dropped, its log directory kept. */
    protected abstract void stop(B b);

    /** The broker starts over its log directory: new (a new topic, or a given state) or again
     * after a crash; online, in a new session, with no fetcher, then its Kafka objects. */
    protected final void start(B b, boolean isNew) throws IOException {
        b.online = true;
        b.session = nextSession(b);
        b.startedMs = time.milliseconds();
        b.fetchOffset = null;
        b.truncating = false;
        startKafka(b, isNew);
    }

    /** The session of the broker's next start (the 2.x/0.10 lines count starts). */
    protected long nextSession(B b) {
        return b.session + 1;
    }

    /** The broker's Kafka objects over its log directory (LogManager.startup, the Partition). */
    protected abstract void startKafka(B b, boolean isNew) throws IOException;

    /** The broker handles a controller decision (LeaderAndIsr or metadata) as its Kafka does;
     * isNew for the first one of a new topic. */
    protected abstract void apply(B b, Registration r, boolean isNew);

    /** Builds the given state's logs, caches and views on each started broker (protocol 3);
     * only the lines whose hello says initial_state. */
    protected void fromGiven(Map<String, Object> initial) throws IOException {
        throw new IllegalArgumentException("this adapter cannot start from a given state");
    }

    /** After a new topic's first decision reached every broker (the lines that need a step there). */
    protected void startedNewPartition() {
    }

    /** OffsetsForLeaderEpoch at the broker (epoch_query): its answer, on the lines that have the step. */
    protected EpochEnd lastOffsetForLeaderEpoch(B b, int epoch, Integer currentLeaderEpoch) {
        throw new IllegalArgumentException("step kind epoch_query is not supported");
    }

    /** Truncates the follower's log to the offset (Partition.truncateTo or LogManager.truncateTo). */
    protected abstract void truncateTo(B f, long offset);

    /** Empties the follower's log and starts it at the offset (truncateFullyAndStartAt). */
    protected abstract void truncateFullyAndStartAt(B f, long offset);

    /** 0.10's follower exits (System.exit) when its leader's log ends before its own and
     * unclean election is off (FOLLOWER-OOR-2); later lines truncate. */
    protected boolean followerExitsBehindLeader() {
        return false;
    }

    /** The leader's append of a client batch (Partition.appendRecordsToLeader): the offset after it. */
    protected abstract long appendAsLeader(B leader, List<String> values, int requiredAcks) throws KafkaError;

    /** Partition.checkEnoughReplicasReachOffset: null while waiting, else "acked" or the error's
     * name (the line calls {@link #ackOutcome(boolean, String)} with Kafka's answer). */
    protected abstract String ackOutcome(B leader, long requiredOffset);

    /** What checkEnoughReplicasReachOffset's (enough, error) means for the produce: done with the
     * error, done ("acked"), or still waiting (null). */
    protected static String ackOutcome(boolean enough, String error) {
        return error != null ? error : enough ? "acked" : null;
    }

    public abstract void fetch(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException;

    /** The leader the follower's fetcher fetches from (its name), or null when it follows none. */
    protected abstract String leaderFollowed(B f);

    /** The answer (to the follower's current session) is for its fetcher's current leader,
     * epoch and offset (else MSG-DROP-1). */
    protected abstract boolean forCurrentFetch(B f, A answer);

    /** The follower's fetcher processes the answer (AbstractFetcherThread.processFetchRequest). */
    protected abstract void processFetchAnswer(B f, A answer) throws IOException;

    /** The HW in the broker's replication-offset-checkpoint file (the file exists). */
    protected abstract long readHwCheckpoint(File file);

    /** DelayedFetch's completion check: the parked fetch can be answered now (its leader is online). */
    protected abstract boolean fetchReady(R parked);

    /** The leader's read for a follower's fetch (ReplicaManager.readFromLocalLog / Partition's
     * read); updateFetchState for a new fetch, which records the follower's state. */
    protected abstract A read(R request, boolean updateFetchState) throws IOException;

    /** DelayedFetch.onComplete: the leader reads again, without updating the follower's state. */
    protected A answerParked(R parked) throws IOException {
        return read(parked, false);
    }

    /** Partition.maybeShrinkIsr on an online broker (the isr-expiration task). */
    protected abstract void shrinkIsr(B b);

    /** ReplicaManager.checkpointHighWatermarks for this broker's one partition. */
    protected abstract void checkpoint(B b);

    /** LogManager.checkpointLogStartOffsets for this broker (the kafka-log-start-offset-checkpoint
     * task, CKPT-3): a raised log start survives a crash only once written. No-op where a
     * follower never raises its log start (before KIP-107). */
    protected void checkpointLogStart(B b) {
    }

    /** log.initial.task.delay.ms: when a LogManager first runs its periodic tasks. */
    static final long LOG_INITIAL_TASK_DELAY_MS = 30_000;
    /** log.flush.start.offset.checkpoint.interval.ms (default). */
    static final long LOG_START_CHECKPOINT_INTERVAL_MS = 60_000;

    /** The broker's HW differs from its checkpoint file (CKPT-1 with an interval of 0). */
    protected abstract boolean checkpointBehind(B b);

    /** The replica's part of the observation. */
    protected abstract ReplicaView view(B b);

    /** The ZooKeeper lines keep the last ISR member on removal; 0.10 only while unclean election is off. */
    protected boolean keepsLastIsrMember() {
        return true;
    }

    /** ZooKeeper controllers write a new leader epoch with every ISR removal; KRaft only when the leader changes. */
    protected boolean isrRemovalIsNewLeaderEpoch() {
        return true;
    }

    /** An ISR-only change at the same leader epoch: ZooKeeper sends no LeaderAndIsr for it; KRaft
     * lines override this to deliver the metadata. */
    protected void publishIsrChange() {
    }

    /** Whether elect refuses a notify list that names an unknown replica (CTRL-ELECT-5). */
    protected boolean refusesUnknownNotify() {
        return true;
    }

    /** A crash with unflushed_from (a power failure): no adapter can drop the page cache. */
    public void refuseUnflushedCrash() throws Rejected {
        throw new IllegalArgumentException("crash.unflushed_from is not supported");
    }

    /** Adds the line's extra top-level observation fields (epoch_query where it is a step). */
    protected void observeMore(Map<String, Object> out) {
    }

    /** Drops what Kafka keeps JVM-wide for the closed brokers (metrics), on the lines that need it. */
    protected void releaseGlobals() {
    }

    // ------------------------------------------------------------------ controller

    public final B broker(String name) {
        B b = byName.get(name);
        if (b == null) {
            throw new IllegalArgumentException("unknown replica " + name + " (replicas: " + byName.keySet() + ")");
        }
        return b;
    }

    /**
     * Starts the reset's partition: the given state (protocol 3: the controller's record, then
     * the line's fromGiven, then the brokers the state says are offline stopped), else a new
     * topic whose brokers all start and receive the first decision.
     */
    @SuppressWarnings("unchecked")
    protected final void begin(Map<String, Object> config, Map<String, Object> initial) throws IOException {
        if (initial != null) {
            givenPartition(initial);
            fromGiven(initial);
            Map<String, Map<String, Object>> given = (Map<String, Map<String, Object>>) initial.get("replicas");
            for (B b : brokers) {
                if (Boolean.FALSE.equals(given.get(b.name).get("online"))) {
                    stop(b);
                }
            }
            return;
        }
        newPartition((String) config.get("initial_leader"));
        for (B b : brokers) {
            start(b, true);
        }
        for (B b : brokers) {
            apply(b, registration(), true);
        }
        startedNewPartition();
        afterStep();
    }

    /** How a line sets a given leader's view of one follower (see givenFollowerViews). */
    @FunctionalInterface
    protected interface FollowerView<B> {
        /** leo: the follower's LEO (null: unknown); caughtUpMs: when it was last caught up, on
         * this cluster's clock (null: never). */
        void set(B follower, Long leo, Long caughtUpMs) throws IOException;
    }

    /**
     * A given leader's view of each follower (spec/adapter-protocol.md "reset": remote_leo, null
     * unknown; last_caught_up_ms, null never, on kconform's clock from 0). Where the state leaves
     * last_caught_up_ms out it is INIT-5's default: ISR members caught up now, others never.
     */
    @SuppressWarnings("unchecked")
    protected final void givenFollowerViews(B leader, Map<String, Object> leaderGiven, FollowerView<B> set)
        throws IOException {
        Map<String, Object> remote = (Map<String, Object>) leaderGiven.get("remote_leo");
        Map<String, Object> caught = (Map<String, Object>) leaderGiven.get("last_caught_up_ms");
        for (B f : brokers) {
            if (f == leader) {
                continue;
            }
            Object leo = remote == null ? null : remote.get(f.name);
            Long caughtUpMs;
            if (caught == null || !caught.containsKey(f.name)) {
                caughtUpMs = ctrlIsr.contains(f.id) ? ManualClock.ORIGIN_MS : null;
            } else {
                Object at = caught.get(f.name);
                caughtUpMs = at == null ? null : ManualClock.ORIGIN_MS + ((Number) at).longValue();
            }
            set.set(f, leo == null ? null : ((Number) leo).longValue(), caughtUpMs);
        }
    }

    /** Applies a decision that is not a new topic's first. */
    protected final void apply(B b, Registration r) {
        apply(b, r, false);
    }

    protected final Registration registration() {
        return new Registration(ctrlLeader, ctrlEpoch, ctrlPartitionEpoch, List.copyOf(ctrlIsr));
    }

    /** CTRL-ELECT-5 / LAI-5: after a new leader epoch every live broker is sent the decision;
     * those in notify apply it now (after what is queued for them), the others when
     * deliver_leader_and_isr says. */
    protected final void publish(boolean leaderEpochChanged, List<String> notify) {
        if (!leaderEpochChanged) {
            publishIsrChange();
            return;
        }
        Registration r = registration();
        for (B b : brokers) {
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

    /** Sends the current decision to each live broker but {@code except}: at once, or after what
     * is queued for it (records apply in log order). */
    protected final void sendInOrder(B except) {
        Registration r = registration();
        for (B b : brokers) {
            if (b == except || !b.online) {
                continue;
            }
            if (b.inbox.isEmpty()) {
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

    /** Offline election (OfflinePartitionLeaderSelector / OfflinePartitionLeaderElectionStrategy /
     * KRaft's PartitionChangeBuilder): the first live ISR member, else (unclean) the first live
     * replica; true when a leader was elected (a new leader epoch). */
    private boolean offlineElection() {
        List<Integer> live = liveIsr();
        if (!live.isEmpty()) {
            ctrlLeader = live.get(0);
            ctrlIsr = live;
        } else if (unclean && brokers.stream().anyMatch(x -> x.online)) {
            B first = brokers.stream().filter(x -> x.online).findFirst().orElseThrow();
            ctrlLeader = first.id;
            ctrlIsr = List.of(first.id);
        } else {
            return false;
        }
        ctrlEpoch += 1;
        ctrlPartitionEpoch += 1;
        return true;
    }

    /**
     * A dead broker leaves the ISR (and the leadership, if it led). ZooKeeper controllers
     * (KafkaController.removeReplicaFromIsr in 0.10, ReplicaStateMachine.doRemoveReplicasFromIsr
     * in 1.1 - 2.6) write a new leader epoch even when the leader stays; KRaft bumps the leader
     * epoch only when the leader changes and writes nothing when nothing changes.
     */
    private void removeFromIsr(int id) {
        if (!ctrlIsr.contains(id)) {
            return;
        }
        List<Integer> isr = new ArrayList<>(ctrlIsr);
        isr.remove(Integer.valueOf(id));
        if (isr.isEmpty() && keepsLastIsrMember()) {
            isr = ctrlIsr; // the last member stays (KAFKA-5642; KRaft without ELR)
        }
        Integer leader = ctrlLeader != null && ctrlLeader == id ? null : ctrlLeader;
        if (isrRemovalIsNewLeaderEpoch()) {
            ctrlEpoch += 1;
        } else {
            if (isr.equals(ctrlIsr) && Objects.equals(leader, ctrlLeader)) {
                return;
            }
            if (!Objects.equals(leader, ctrlLeader)) {
                ctrlEpoch += 1;
            }
        }
        ctrlLeader = leader;
        ctrlIsr = isr;
        ctrlPartitionEpoch += 1;
    }

    private List<Integer> unhandledFailures() {
        List<Integer> out = new ArrayList<>();
        for (B b : brokers) {
            if (!b.online && !down.contains(b.id)) {
                out.add(b.id);
            }
        }
        return out;
    }

    /** KafkaController.onBrokerFailure (KRaft: the broker's session fenced): elect for the
     * partition if its leader died, else remove the dead from the ISR; one decision sent. */
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
        publish(ctrlEpoch != epochBefore, notify);
    }

    /** ELECT: a controlled election of a named ISR member, or (no leader named) the controller
     * handling pending broker failures or a leaderless partition. */
    public final void elect(String leader, List<String> notify) throws Rejected {
        if (notify != null && refusesUnknownNotify()) {
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
            int before = ctrlEpoch;
            offlineElection();
            publish(ctrlEpoch != before, notify);
            return;
        }
        B x = byName.get(leader);
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
        ctrlPartitionEpoch += 1;
        publish(true, notify);
    }

    /** LAI-5: the oldest decision queued for the broker arrives. */
    public void deliverLeaderAndIsr(String name) throws Rejected {
        B b = broker(name);
        if (b.inbox.isEmpty()) {
            throw new Rejected("LAI-PRE-1", "deliver_leader_and_isr: none is in flight to " + name);
        }
        apply(b, b.inbox.poll());
    }

    // ------------------------------------------------------------------ steps

    public final void produce(String id, List<String> values, String acks, String to) throws Rejected {
        if (producer.containsKey(id)) {
            throw new Rejected("PRODUCE-PRE-1", "produce id " + id + " was used before");
        }
        if (to != null && !byName.containsKey(to)) {
            throw new Rejected("PRODUCE-PRE-1", "produce.to: unknown replica " + to);
        }
        boolean ackAll = "all".equals(acks) || "-1".equals(acks);
        boolean ack0 = "0".equals(acks);
        String status;
        B target = to != null ? byName.get(to) : ctrlLeader == null ? null : brokers.get(ctrlLeader);
        if (target == null) {
            status = "LEADER_NOT_AVAILABLE";
        } else if (!target.online) {
            status = "NETWORK_EXCEPTION";
        } else {
            try {
                long end = appendAsLeader(target, values, ackAll ? -1 : ack0 ? 0 : 1);
                if (ackAll) {
                    PendingProduce<B> p = new PendingProduce<>(id, target, end, time.milliseconds() + requestTimeoutMs);
                    pending.add(p);
                    producer.put(id, "pending");
                    completeIfDone(p);
                    status = producer.get(id);
                } else {
                    status = "acked";
                }
            } catch (KafkaError e) {
                status = e.error;
            }
        }
        producer.put(id, ack0 ? "sent" : status);
    }

    /** DelayedProduce.tryComplete: done when the leader says so, or NETWORK_EXCEPTION when it is gone (PRODUCE-6). */
    private void completeIfDone(PendingProduce<B> p) {
        if (!pending.contains(p)) {
            return;
        }
        B b = p.leader();
        String outcome = !b.online || !b.hasPartition() ? "NETWORK_EXCEPTION" : ackOutcome(b, p.requiredOffset());
        if (outcome != null) {
            pending.remove(p);
            producer.put(p.id(), outcome);
        }
    }

    protected final void completeAllPending() {
        for (PendingProduce<B> p : List.copyOf(pending)) {
            completeIfDone(p);
        }
    }

    /** After a decision reached a leader: its waiting produces may complete. */
    protected final void completePendingAt(B leader) {
        for (PendingProduce<B> p : List.copyOf(pending)) {
            if (p.leader() == leader) {
                completeIfDone(p);
            }
        }
    }

    /** fetch_round: a fetch, and its delivery when the leader answered at once (FETCH-ROUND-1). */
    public final void fetchRound(String name, Long maxWaitMs, Integer maxRecords) throws Rejected, IOException {
        fetch(name, maxWaitMs, maxRecords);
        if (broker(name).inFlight != null) {
            deliverFetch(name);
        }
    }

    public final void isrExpiration(String name) throws Rejected {
        B b = broker(name);
        if (!b.online) {
            throw new Rejected("ISR-SHRINK-PRE-1", name + " is offline");
        }
        shrinkIsr(b);
        completeAllPending();
    }

    public final void crash(String name) throws Rejected {
        B b = broker(name);
        if (!b.online) {
            throw new Rejected("CRASH-PRE-1", name + " is already offline");
        }
        stop(b);
        completeAllPending(); // PRODUCE-6: NETWORK_EXCEPTION for those waiting at b
    }

    public final void restart(String name) throws Rejected, IOException {
        B b = broker(name);
        if (b.online) {
            throw new Rejected("RESTART-PRE-1", name + " is online");
        }
        if (!down.contains(b.id) && ctrlLeader != null && ctrlLeader == b.id) {
            // RESTART-2: the failure is handled before the start (KIP-380 on ZooKeeper; KRaft
            // fences the old session first)
            handleFailures(null);
        }
        down.remove(b.id);
        start(b, false);
        apply(b, registration()); // onBrokerStartup: the decision for its replicas
    }

    /** FETCH-PRE-1: one fetch at a time per follower. */
    protected final void refuseOutstandingFetch(B f) throws Rejected {
        if (f.parked != null || f.inFlight != null) {
            throw new Rejected("FETCH-PRE-1", f.name + " already has a fetch outstanding");
        }
    }

    /** The leader's answer goes back at once (an error, records, or no wait), else the fetch
     * parks in the leader's purgatory (DelayedFetch). */
    protected final void answerOrPark(B f, R request, A answer, boolean immediate) {
        completeAllPending(); // the leader's read may have moved its HW
        if (immediate) {
            f.inFlight = answer;
        } else {
            f.parked = request;
        }
    }

    /** FETCH-PRE-1 (and the epoch request's precondition): the follower is online and follows an
     * online leader; that leader. */
    protected final B followedLeader(B f, String rule) throws Rejected {
        if (!f.online) {
            throw new Rejected(rule, f.name + " is offline");
        }
        String leader = leaderFollowed(f);
        if (f.fetchOffset == null || leader == null) {
            throw new Rejected(rule, f.name + " does not follow a leader");
        }
        B l = byName.get(leader);
        if (l == null || !l.online) {
            throw new Rejected(rule, f.name + " follows " + leader + ", which is offline");
        }
        return l;
    }

    /** deliver_fetch: the answer on its way to the follower arrives; one for a fetcher session
     * that is gone is dropped (MSG-DROP-1), else the follower processes it. */
    public final void deliverFetch(String name) throws Rejected, IOException {
        B f = broker(name);
        A answer = f.inFlight;
        if (answer == null) {
            throw new Rejected("FETCH-DELIVER-PRE-1", "deliver_fetch: no fetch response is in flight to " + name);
        }
        f.inFlight = null;
        if (f.online && f.session == answer.request().session() && forCurrentFetch(f, answer)) {
            processFetchAnswer(f, answer);
        }
    }

    /** One batch of a leader's log as a fetch reads it. */
    public record Batch(long baseOffset, long lastOffset, int sizeInBytes) {
    }

    /**
     * max_records stands for replica.fetch.max.bytes (FETCH-LEADER-3): the bytes of the whole
     * batches from the fetch offset that hold at most that many records. Kafka never splits a
     * batch. A limit ending inside the first batch has no counterpart (Kafka would return that
     * whole batch, minOneMessage); one ending inside a later batch stops before it when
     * {@code laterCutStops} (fewer records, as CHOICE-4 allows), else it has none either.
     */
    protected static int wholeBatchBytes(long fetchOffset, int maxRecords, Iterable<Batch> batches,
                                         boolean laterCutStops) {
        int bytes = 0;
        long records = 0;
        for (Batch batch : batches) {
            long n = batch.lastOffset() - Math.max(batch.baseOffset(), fetchOffset) + 1;
            if (records + n > maxRecords) {
                if (laterCutStops ? records == 0 : records < maxRecords) {
                    throw new IllegalArgumentException("max_records " + maxRecords + " ends inside a batch of " + n
                        + " records at offset " + (fetchOffset + records) + ": Kafka fetches whole batches"
                        + " (replica.fetch.max.bytes), so this fetch has no Kafka counterpart");
                }
                break;
            }
            records += n;
            bytes += batch.sizeInBytes();
        }
        return Math.max(bytes, 1);
    }

    /** The HW the broker's checkpoint file holds (0 when there is none). */
    protected final long checkpointedHw(B b) {
        File file = b.hwCheckpointFile();
        return file.exists() ? readHwCheckpoint(file) : 0L;
    }

    /** DelayedFetch.tryComplete for the fetches parked at a leader: complete when the line's
     * check says so, or at the deadline; a leader that went down takes its purgatory with it. */
    protected final void completeParked(boolean deadlinesOnly) {
        for (B f : brokers) {
            R p = f.parked;
            if (p == null) {
                continue;
            }
            if (!p.leader().online) {
                f.parked = null; // the leader's purgatory is gone with it
                continue;
            }
            boolean due = time.milliseconds() >= p.deadlineMs();
            if (due || (!deadlinesOnly && fetchReady(p))) {
                f.parked = null;
                try {
                    A answer = answerParked(p);
                    if (f.online && f.session == p.session()) {
                        f.inFlight = answer;
                    }
                } catch (IOException e) {
                    throw new IllegalStateException("reading the leader's log failed: " + e, e);
                }
            }
        }
    }

    /** EPOCH-QUERY: the broker's OffsetsForLeaderEpoch answer, observed as epoch_query. */
    public final void epochQuery(String name, int epoch, Integer currentLeaderEpoch) throws Rejected {
        B b = broker(name);
        if (!b.online) {
            throw new Rejected("EPOCH-QUERY-PRE-1", name + " is offline");
        }
        EpochEnd answer = lastOffsetForLeaderEpoch(b, epoch, currentLeaderEpoch);
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("replica", name);
        q.put("requested_epoch", epoch);
        q.put("error", answer.error());
        q.put("leader_epoch", answer.error() == null ? answer.leaderEpoch() : -1);
        q.put("end_offset", answer.error() == null ? answer.endOffset() : -1L);
        epochQuery = q;
    }

    /**
     * OFFSET_OUT_OF_RANGE at the follower: AbstractFetcherThread.fetchOffsetAndTruncate with the
     * leader's ListOffsets (LATEST, EARLIEST) folded in. A leader whose log ends before the
     * follower's: truncate to its end (0.10 without unclean election: the follower exits); a
     * leader whose log starts after the follower's end: start over at its start.
     */
    protected final void fetchOffsetAndTruncate(B f, long replicaEnd, long leaderStart, long leaderEnd) {
        if (leaderEnd < replicaEnd) {
            if (followerExitsBehindLeader()) {
                stop(f);
                completeAllPending();
                return;
            }
            truncateTo(f, leaderEnd);
            f.fetchOffset = leaderEnd;
            return;
        }
        if (leaderStart > replicaEnd) {
            truncateFullyAndStartAt(f, leaderStart);
        }
        f.fetchOffset = Math.max(leaderStart, replicaEnd);
    }

    // ------------------------------------------------------------------ time

    /** TICK-1: parked-fetch and produce deadlines, then isr-expiration runs (every
     * replica.lag.time.max.ms / 2 from the broker's start, ReplicaManager.startup), then HW
     * checkpoints (every replica.high.watermark.checkpoint.interval.ms), then the log-start
     * checkpoint (LogManager, 30 s after the start, then every 60 s), in time order. */
    public final void tick(long ms) {
        long from = time.milliseconds();
        long to = from + ms;
        List<Timer> timers = new ArrayList<>();
        for (PendingProduce<B> p : pending) {
            if (p.deadlineMs() > from && p.deadlineMs() <= to) {
                timers.add(new Timer(p.deadlineMs(), 1, () -> {
                    if (pending.remove(p)) {
                        producer.put(p.id(), "REQUEST_TIMED_OUT");
                    }
                }));
            }
        }
        for (B f : brokers) {
            R p = f.parked;
            if (p != null && p.deadlineMs() > from && p.deadlineMs() <= to) {
                timers.add(new Timer(p.deadlineMs(), 0, () -> completeParked(true)));
            }
        }
        for (B b : brokers) {
            if (!b.online) {
                continue;
            }
            addPeriodic(timers, b.startedMs, lagMs / 2, from, to, 2, () -> {
                if (b.online) {
                    shrinkIsr(b);
                }
            });
            if (checkpointIntervalMs > 0) {
                addPeriodic(timers, b.startedMs, checkpointIntervalMs, from, to, 3, () -> checkpoint(b));
            }
            // First run log.initial.task.delay.ms after the start, then every interval.
            addPeriodic(timers, b.startedMs + LOG_INITIAL_TASK_DELAY_MS - LOG_START_CHECKPOINT_INTERVAL_MS,
                LOG_START_CHECKPOINT_INTERVAL_MS, from, to, 4, () -> {
                    if (b.online) {
                        checkpointLogStart(b);
                    }
                });
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

    /** After every step: parked fetches and waiting produces that can complete do; CKPT-1. */
    public final void afterStep() {
        completeParked(false);
        completeAllPending();
        if (checkpointIntervalMs == 0) {
            for (B b : brokers) {
                if (b.online && checkpointBehind(b)) {
                    checkpoint(b);
                }
            }
        }
    }

    // ------------------------------------------------------------------ observation

    public final Map<String, Object> observe() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("clock_ms", time.milliseconds() - ManualClock.ORIGIN_MS);
        out.put("leader", ctrlLeader == null ? null : brokers.get(ctrlLeader).name);
        out.put("leader_epoch", ctrlEpoch);
        List<String> isr = new ArrayList<>();
        for (B b : brokers) {
            if (ctrlIsr.contains(b.id)) {
                isr.add(b.name);
            }
        }
        out.put("isr", isr);
        out.put("partition_epoch", ctrlPartitionEpoch);
        Map<String, Object> replicas = new LinkedHashMap<>();
        for (B b : brokers) {
            replicas.put(b.name, view(b).toMap());
        }
        out.put("replicas", replicas);
        out.put("producer", new LinkedHashMap<>(producer));
        observeMore(out);
        return out;
    }

    /** A leader's view of each other replica's LEO (null where it knows none, LEO < 0). */
    protected final Map<String, Object> remoteLeos(B leader, ToLongFunction<B> leoOf) {
        Map<String, Object> remote = new LinkedHashMap<>();
        for (B other : brokers) {
            if (other == leader) {
                continue;
            }
            long leo = leoOf.applyAsLong(other);
            remote.put(other.name, leo < 0 ? null : leo);
        }
        return remote;
    }

    /** The value of a record as a state spells it ("value@epoch"). */
    protected static byte[] valueOf(String record) {
        return record.substring(0, record.lastIndexOf('@')).getBytes(StandardCharsets.UTF_8);
    }

    /** The leader epoch of a record as a state spells it ("value@epoch"). */
    protected static int epochOf(String record) {
        return Integer.parseInt(record.substring(record.lastIndexOf('@') + 1));
    }

    /** A record as the observation spells it: its value, "@", the epoch of its batch. */
    protected static String recordText(ByteBuffer value, int epoch) {
        byte[] bytes = new byte[value.remaining()];
        value.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8) + "@" + epoch;
    }

    @Override
    public final void close() {
        for (B b : brokers) {
            if (b.online) {
                stop(b);
            }
        }
        LogDirs.deleteRecursively(root);
        releaseGlobals();
    }
}
