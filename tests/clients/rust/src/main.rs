// A Rust program profiled by the Pyroscope Rust SDK (crates.io `pyroscope` 2.1.5, its
// pprof-rs backend): hot_a (under the tag phase=a, set with the agent's tag_wrapper)
// does several times the work of hot_b. Usage: rust-app SERVER APP SECONDS.
// Prints the CPU seconds its loop spent, the seconds it ran and the CPU seconds of the
// whole process, the SDK's own threads and last push included.
use std::hint::black_box;
use std::time::{Duration, Instant};

use pyroscope::backend::{pprof_backend, BackendConfig, PprofConfig};
use pyroscope::pyroscope::PyroscopeAgentBuilder;

#[inline(never)]
fn hot_a() -> u64 {
    let mut total = 0u64;
    for i in 0..black_box(60_000_000u64) {
        total = total.wrapping_add(black_box(i).wrapping_mul(i));
    }
    total
}

#[inline(never)]
fn hot_b() -> u64 {
    let mut total = 0u64;
    for i in 0..black_box(10_000_000u64) {
        total = total.wrapping_add(black_box(i));
    }
    total
}

fn cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args[3].parse()?;
    let backend = pprof_backend(PprofConfig { sample_rate: 100 }, BackendConfig::default());
    let agent = PyroscopeAgentBuilder::new(&args[1], &args[2], 100, "pyroscope-rs", "2.1.5", backend)
        .tags(vec![("team", "sre")])
        .upload_interval(Duration::from_secs(2))
        .build()?
        .start()?;
    let (add_tag, remove_tag) = agent.tag_wrapper();
    let (cpu0, start) = (cpu_seconds(), Instant::now());
    let mut result = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        add_tag("phase".into(), "a".into())?;
        result = result.wrapping_add(hot_a());
        remove_tag("phase".into(), "a".into())?;
        result = result.wrapping_add(hot_b());
    }
    let (cpu, wall) = (cpu_seconds() - cpu0, start.elapsed().as_secs_f64());
    agent.stop()?.shutdown();
    println!("{} {} {} {}", result % 2, cpu, wall, cpu_seconds());
    Ok(())
}
