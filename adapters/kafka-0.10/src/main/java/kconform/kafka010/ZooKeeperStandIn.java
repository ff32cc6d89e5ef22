package kconform.kafka010;

import java.lang.reflect.Proxy;
import java.util.List;
import kafka.utils.ZKStringSerializer$;
import kafka.utils.ZkUtils;
import org.I0Itec.zkclient.IZkConnection;
import org.I0Itec.zkclient.ZkClient;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import scala.Option;
import scala.Tuple2;

/**
 * What Kafka 0.10.2's Partition reads from and writes to ZooKeeper, answered by the adapter's
 * controller: no topic config override (AdminUtils.fetchEntityConfig reads nothing), and the
 * leader's conditional ISR write (ReplicationUtils.updateLeaderAndIsr), which the controller
 * accepts only at the znode version it holds.
 */
final class ZooKeeperStandIn {
    private ZooKeeperStandIn() {
    }

    /** A ZkUtils whose client is connected to nothing (every read finds no node) and whose
     * conditional update goes to {@code write} (path, data, expected version) -> (ok, new version). */
    static ZkUtils zkUtils(TriFunction write) {
        IZkConnection connection = (IZkConnection) Proxy.newProxyInstance(IZkConnection.class.getClassLoader(),
            new Class<?>[] {IZkConnection.class}, (self, method, args) -> switch (method.getName()) {
                case "connect" -> {
                    // ZooKeeper delivers events on its own thread, and ZkClient waits for the
                    // connection (holding its event lock until it waits) on the calling one.
                    Thread events = new Thread(() -> ((Watcher) args[0]).process(new WatchedEvent(
                        Watcher.Event.EventType.None, Watcher.Event.KeeperState.SyncConnected, null)));
                    events.setDaemon(true);
                    events.start();
                    yield null;
                }
                case "getZookeeperState" -> ZooKeeper.States.CONNECTED;
                case "getServers" -> "kconform";
                case "exists" -> false;
                case "getChildren" -> List.of();
                case "hashCode" -> System.identityHashCode(self);
                case "equals" -> self == args[0];
                case "toString" -> "IZkConnection(kconform)";
                default -> null; // readData: no node; close: nothing to close
            });
        ZkClient client = new ZkClient(connection, 10_000, ZKStringSerializer$.MODULE$, Long.MAX_VALUE);
        return new ZkUtils(client, null, false) {
            @Override
            public Tuple2<Object, Object> conditionalUpdatePersistentPath(String path, String data, int expectVersion,
                Option<scala.Function3<ZkUtils, String, String, Tuple2<Object, Object>>> optionalChecker) {
                return write.apply(path, data, expectVersion);
            }
        };
    }

    /** The controller's answer to a conditional znode write. */
    @FunctionalInterface
    interface TriFunction {
        Tuple2<Object, Object> apply(String path, String data, int expectVersion);
    }

}
