// Producer-consumer hand-off through std::mutex + std::condition_variable +
// std::list, with several consumers. Planted problem: consumers spend much of
// their time blocked on the queue's mutex and condition variable instead of
// working (the consumers also update shared statistics while holding the lock).
//
// Built with -DMEASURE_WAIT, every consumer times its own waiting (lock
// acquisition and condition-variable waits) and the program prints the total on
// stderr: the independent truth the profiler's numbers are checked against.
// With PRODCONS_WAIT_LOG=FILE set too, it writes every wait's start and end to FILE
// ("TID FROM TO", CLOCK_MONOTONIC ns) after a line per consumer ("L TID BORN DIED"):
// what the program was doing at each snapshot's instant (bench/wall_instants.py).
//
// usage: prodcons [MESSAGES] [CONSUMERS]
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

namespace {

struct Message {
    std::uint64_t id;
    std::string payload;
};

std::mutex queue_mutex;
std::condition_variable queue_ready;
std::list<Message> queue;
bool done = false;
std::uint64_t processed_bytes = 0;  // shared statistics, guarded by queue_mutex

std::uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

__attribute__((noinline)) std::string make_payload(std::uint64_t id) {
    std::string s(256, 'a');
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>('a' + (id * 31 + i * 7) % 26);
    return s;
}

__attribute__((noinline)) std::uint64_t process_message(const Message& m) {
    std::uint64_t h = 1469598103934665603ull;
    for (int round = 0; round < 40; ++round)
        for (char c : m.payload) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h;
}

__attribute__((noinline)) void update_statistics(const Message& m) {
    std::uint64_t h = 0;
    for (int round = 0; round < 40; ++round)
        for (char c : m.payload) h += static_cast<unsigned char>(c) * (round + 1);
    processed_bytes += m.payload.size() + (h & 1);
}

__attribute__((noinline)) void producer(std::uint64_t messages) {
    for (std::uint64_t id = 0; id < messages; ++id) {
        Message m{id, make_payload(id)};
        {
            std::lock_guard<std::mutex> lock(queue_mutex);
            queue.push_back(std::move(m));
        }
        queue_ready.notify_one();
    }
    {
        std::lock_guard<std::mutex> lock(queue_mutex);
        done = true;
    }
    queue_ready.notify_all();
}

#ifdef MEASURE_WAIT
struct Span {
    long tid;
    std::uint64_t from, to;
};
const bool logging_waits = std::getenv("PRODCONS_WAIT_LOG") != nullptr;
std::mutex log_mutex;
std::vector<Span> wait_log, life_log;  // guarded by log_mutex

void log_spans(const std::vector<Span>& waits, const Span& life) {
    std::lock_guard<std::mutex> lock(log_mutex);
    wait_log.insert(wait_log.end(), waits.begin(), waits.end());
    life_log.push_back(life);
}

void write_log() {
    std::FILE* out = std::fopen(std::getenv("PRODCONS_WAIT_LOG"), "w");
    if (!out) return;
    for (const Span& s : life_log) std::fprintf(out, "L %ld %llu %llu\n", s.tid,
                                                static_cast<unsigned long long>(s.from),
                                                static_cast<unsigned long long>(s.to));
    for (const Span& s : wait_log) std::fprintf(out, "%ld %llu %llu\n", s.tid,
                                                static_cast<unsigned long long>(s.from),
                                                static_cast<unsigned long long>(s.to));
    std::fclose(out);
}
#endif

__attribute__((noinline)) void consumer(std::uint64_t* waited_ns, std::uint64_t* lived_ns) {
    const std::uint64_t born = now_ns();
    std::uint64_t waited = 0;
#ifdef MEASURE_WAIT
    const long tid = syscall(SYS_gettid);
    std::vector<Span> waits;
#endif
    std::uint64_t checksum = 0;
    for (;;) {
        std::uint64_t t0 = now_ns();
        std::unique_lock<std::mutex> lock(queue_mutex);
        queue_ready.wait(lock, [] { return !queue.empty() || done; });
        const std::uint64_t t1 = now_ns();
        waited += t1 - t0;
#ifdef MEASURE_WAIT
        if (logging_waits) waits.push_back({tid, t0, t1});
#endif
        if (queue.empty()) break;
        Message m = std::move(queue.front());
        queue.pop_front();
        update_statistics(m);
        lock.unlock();
        checksum += process_message(m);
    }
    *waited_ns = waited;
    *lived_ns = now_ns() - born;
#ifdef MEASURE_WAIT
    if (logging_waits) log_spans(waits, {tid, born, born + *lived_ns});
#endif
    if (checksum == 42) std::puts("");
}

}  // namespace

int main(int argc, char** argv) {
    const std::uint64_t messages = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
    const int consumers = argc > 2 ? std::atoi(argv[2]) : 3;
    std::vector<std::uint64_t> waited(consumers), lived(consumers);
    std::vector<std::thread> threads;
    for (int i = 0; i < consumers; ++i) threads.emplace_back(consumer, &waited[i], &lived[i]);
    producer(messages);
    for (auto& t : threads) t.join();
    std::uint64_t total_wait = 0, total_life = 0;
    for (int i = 0; i < consumers; ++i) {
        total_wait += waited[i];
        total_life += lived[i];
    }
#ifdef MEASURE_WAIT
    std::fprintf(stderr, "prodcons: consumers waited %llu ns of %llu ns (%.2f%%)\n",
                 static_cast<unsigned long long>(total_wait),
                 static_cast<unsigned long long>(total_life), 100.0 * total_wait / total_life);
    if (logging_waits) write_log();
#endif
    std::printf("prodcons: %llu messages, %d consumers, %llu bytes\n",
                static_cast<unsigned long long>(messages), consumers,
                static_cast<unsigned long long>(processed_bytes));
    return 0;
}
