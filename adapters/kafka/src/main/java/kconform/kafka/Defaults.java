package kconform.kafka;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.Collections;
import java.util.Optional;
import java.util.Properties;
import java.util.function.BiFunction;

/**
 * Interfaces Kafka needs but whose content is not under test (topic configs, metadata
 * queries Partition never makes here): a proxy answering each call with an empty value
 * of the right type, after an optional override. The override is where the adapter's
 * controller answers what matters (a broker's liveness and epoch, KIP-903).
 */
final class Defaults {
    private Defaults() {
    }

    static <T> T proxy(Class<T> type, BiFunction<String, Object[], Optional<Object>> override) {
        InvocationHandler handler = (self, method, args) -> {
            String name = method.getName();
            if (method.getDeclaringClass() == Object.class) {
                return switch (name) {
                    case "toString" -> type.getSimpleName() + "(kconform)";
                    case "hashCode" -> System.identityHashCode(self);
                    case "equals" -> self == args[0];
                    default -> throw new UnsupportedOperationException(name);
                };
            }
            Optional<Object> answer = override.apply(name, args == null ? new Object[0] : args);
            if (answer.isPresent()) {
                return answer.get();
            }
            return emptyOf(method.getReturnType());
        };
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler));
    }

    private static Object emptyOf(Class<?> t) {
        if (t == boolean.class) {
            return false;
        }
        if (t == int.class || t == long.class || t == short.class || t == byte.class) {
            return t == long.class ? (Object) 0L : t == int.class ? (Object) 0 : t == short.class ? (Object) (short) 0 : (Object) (byte) 0;
        }
        if (t == Optional.class) {
            return Optional.empty();
        }
        if (t == Properties.class) {
            return new Properties();
        }
        if (t == java.util.List.class) {
            return Collections.emptyList();
        }
        if (t == java.util.Set.class) {
            return Collections.emptySet();
        }
        if (t == java.util.Map.class) {
            return Collections.emptyMap();
        }
        return null;
    }
}
