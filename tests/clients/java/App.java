// A small program the Pyroscope Java agent profiles (tests/integration/
// test_pyroscope_clients.py): hotA (under the labels phase=a) does twice hotB's work,
// allocate() allocates and keeps its last 16 blocks alive (in use whenever the agent
// looks, PYROSCOPE_ALLOC_LIVE), two threads contend for a monitor and two for a ReentrantLock
// (parking), each holding it asleep.
// Usage: java -javaagent:agent.jar -cp CLASSES App SECONDS

import io.pyroscope.labels.v2.LabelsSet;
import io.pyroscope.labels.v2.Pyroscope;
import java.util.concurrent.locks.ReentrantLock;

public class App {
    static final Object LOCK = new Object();
    static final ReentrantLock PARKING = new ReentrantLock();
    static volatile long sink;
    static final byte[][] KEPT = new byte[16][];
    static volatile boolean running = true;

    interface Hold {
        void run() throws InterruptedException;
    }

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
            KEPT[i % KEPT.length] = block;
        }
    }

    // Each holds its lock asleep: the other thread waits for it without using CPU time.
    static void holdLock() throws InterruptedException {
        synchronized (LOCK) {
            Thread.sleep(2);
        }
    }

    static void holdParked() throws InterruptedException {
        PARKING.lock();
        try {
            Thread.sleep(2);
        } finally {
            PARKING.unlock();
        }
    }

    static Thread holder(Hold hold) {
        Thread thread = new Thread(() -> {
            try {
                while (running) {
                    hold.run();
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
        Hold lock = App::holdLock;
        Hold park = App::holdParked;
        Thread[] holders = {holder(lock), holder(lock), holder(park), holder(park)};
        while (System.nanoTime() < end) {
            Pyroscope.LabelsWrapper.run(new LabelsSet("phase", "a"), App::hotA);
            hotB();
            allocate();
        }
        running = false;
        for (Thread thread : holders) {
            thread.join();
        }
    }
}
