// Planted: a Vec<String> cloned for every lookup. Fix (--cfg fixed): borrowed.
#[allow(dead_code)]
fn longest(words: Vec<String>) -> usize { words.iter().map(|w| w.len()).max().unwrap_or(0) }
#[allow(dead_code)]
fn longest_ref(words: &[String]) -> usize { words.iter().map(|w| w.len()).max().unwrap_or(0) }

fn main() {
    let words: Vec<String> = (0..300).map(|i| format!("word{}", i * 7)).collect();
    let mut total = 0;
    for _ in 0..150_000 {
        #[cfg(fixed)]
        { total += longest_ref(&words); }
        #[cfg(not(fixed))]
        { total += longest(words.clone()); let _ = longest_ref as fn(&[String]) -> usize; }
    }
    println!("{}", total);
}
