package kconform.adapter;

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/** The brokers' log directories: removing them, and what a crashed process would not hold. */
public final class LogDirs {
    private LogDirs() {
    }

    public static void deleteRecursively(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteRecursively(c);
            }
        }
        f.delete();
    }

    /**
     * Removes the log directories named {@code prefix + pid + "-..."} whose process is no longer
     * running: adapters that kconform killed after a failed step never ran their close (with the
     * logs in memory, /dev/shm, they would add up).
     */
    public static void sweepLeftovers(String prefix) {
        File[] dirs = new File(System.getProperty("java.io.tmpdir")).listFiles((dir, n) -> n.startsWith(prefix));
        if (dirs == null) {
            return;
        }
        for (File d : dirs) {
            String[] parts = d.getName().substring(prefix.length()).split("-", 2);
            try {
                long pid = Long.parseLong(parts[0]);
                if (pid != ProcessHandle.current().pid() && ProcessHandle.of(pid).isEmpty()) {
                    deleteRecursively(d);
                }
            } catch (NumberFormatException e) {
                // not one of ours (an older adapter's name): leave it
            }
        }
    }

    /**
     * A Scala LogManager (Kafka 0.10 to 2.x) locks its directories (a file lock, per JVM); a
     * crashed process holds none. Its private {@code dirLocks} (a Scala collection of
     * kafka.utils.FileLock) is read by reflection, so this works on each line's Scala.
     */
    public static void releaseScalaDirLocks(Object logManager) {
        try {
            for (Field f : logManager.getClass().getDeclaredFields()) {
                if (f.getName().endsWith("dirLocks")) {
                    f.setAccessible(true);
                    Object locks = f.get(logManager);
                    ClassLoader scala = locks.getClass().getClassLoader();
                    Object it = Class.forName("scala.collection.Iterable", true, scala).getMethod("iterator").invoke(locks);
                    Class<?> iterator = Class.forName("scala.collection.Iterator", true, scala);
                    Method hasNext = iterator.getMethod("hasNext");
                    Method next = iterator.getMethod("next");
                    while ((Boolean) hasNext.invoke(it)) {
                        Object lock = next.invoke(it);
                        lock.getClass().getMethod("destroy").invoke(lock);
                    }
                    return;
                }
            }
            throw new IllegalStateException("LogManager has no dirLocks field in this Kafka version");
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot release LogManager's directory locks: " + e, e);
        }
    }
}
