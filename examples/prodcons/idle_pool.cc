// A pool of 4 workers fed by a producer that is slower than all of them: the
// workers spend most of their time waiting on the queue's condition variable.
// Planted problem: idle workers (condvar waits). Built without frame pointers,
// as most programs are, so eBPF stacks stop inside libc.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace {
std::mutex queue_mutex;
std::condition_variable queue_ready;
std::queue<int> jobs;
bool done = false;
volatile unsigned long sink;

void work(int n) {
    for (int i = 0; i < n; i++) sink = sink + static_cast<unsigned long>(i);
}

void worker() {
    for (;;) {
        std::unique_lock<std::mutex> lock(queue_mutex);
        queue_ready.wait(lock, [] { return !jobs.empty() || done; });
        if (jobs.empty()) return;
        jobs.pop();
        lock.unlock();
        work(300000);
    }
}
}  // namespace

int main() {
    std::vector<std::thread> workers;
    for (int i = 0; i < 4; i++) workers.emplace_back(worker);
    for (int i = 0; i < 1000; i++) {
        work(400000);
        {
            std::lock_guard<std::mutex> lock(queue_mutex);
            jobs.push(i);
        }
        queue_ready.notify_one();
    }
    {
        std::lock_guard<std::mutex> lock(queue_mutex);
        done = true;
    }
    queue_ready.notify_all();
    for (auto& t : workers) t.join();
    std::puts("idle_pool: done");
}
