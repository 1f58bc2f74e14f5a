// A small program the Pyroscope Java agent profiles (tests/integration/test_pyroscope_java.py):
// hotA (under the labels phase=a) does twice hotB's work, allocate() allocates, and two
// threads contend for one lock, holding it asleep. Prints the bytes allocate() allocated.
// Usage: java -javaagent:agent.jar -cp CLASSES App SECONDS

import com.sun.management.ThreadMXBean;
import io.pyroscope.labels.v2.LabelsSet;
import io.pyroscope.labels.v2.Pyroscope;
import java.lang.management.ManagementFactory;

public class App {
    static final Object LOCK = new Object();
    static volatile long sink;
    static volatile boolean running = true;

    // Each spins in its own loop, so that each is the leaf of its own samples.
    static void hotA() {
        long x = sink;
        for (int i = 0; i < 8_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;
    }

    static void hotB() {
        long x = sink;
        for (int i = 0; i < 4_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink = x;
    }

    static void allocate() {
        for (int i = 0; i < 64; i++) {
            byte[] block = new byte[64 << 10];
            block[i] = 1;
            sink += block.length;
        }
    }

    // Holds the lock asleep: the other locker waits for it without using CPU time.
    static void holdLock() throws InterruptedException {
        synchronized (LOCK) {
            Thread.sleep(2);
        }
    }

    static Thread locker() {
        Thread thread = new Thread(() -> {
            try {
                while (running) {
                    holdLock();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        thread.start();
        return thread;
    }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        Thread[] lockers = {locker(), locker()};
        ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long self = Thread.currentThread().getId();
        long allocated = 0;
        while (System.nanoTime() < end) {
            Pyroscope.LabelsWrapper.run(new LabelsSet("phase", "a"), App::hotA);
            hotB();
            long before = mx.getThreadAllocatedBytes(self);
            allocate();
            allocated += mx.getThreadAllocatedBytes(self) - before;
        }
        running = false;
        for (Thread thread : lockers) {
            thread.join();
        }
        System.out.println(allocated);
    }
}
