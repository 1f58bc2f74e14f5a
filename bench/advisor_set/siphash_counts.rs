// Planted: a HashMap<u64, u64> with the default SipHash, hashed in a hot loop.
// Fix (--cfg fixed): a multiplicative hasher (what rustc-hash's FxHasher does).
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default)]
struct Fx(u64);
impl Hasher for Fx {
    fn finish(&self) -> u64 { self.0 }
    fn write(&mut self, bytes: &[u8]) { for b in bytes { self.write_u64(*b as u64) } }
    fn write_u64(&mut self, i: u64) { self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517cc1b727220a95) }
}

#[cfg(fixed)]
type Map = HashMap<u64, u64, BuildHasherDefault<Fx>>;
#[cfg(not(fixed))]
type Map = HashMap<u64, u64>;

fn count(keys: u64, rounds: u64) -> u64 {
    let mut m = Map::default();
    let _ = BuildHasherDefault::<Fx>::default();
    for r in 0..rounds {
        for k in 0..keys {
            *m.entry(k.wrapping_mul(2654435761) ^ r).or_insert(0) += 1;
        }
    }
    m.values().sum()
}

fn main() {
    println!("{}", count(2000, 2000));
}
