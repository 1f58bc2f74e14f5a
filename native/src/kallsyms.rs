//! Kernel symbols from a kallsyms file (`/proc/kallsyms`, or perf's copy in
//! its build-id cache): address -> (symbol, module).

/// Kernel text symbols of a kallsyms file, sorted: (address, name, module).
/// Also returns the address of `_text`, if listed.
fn parse_kallsyms(text: &str) -> (Option<u64>, Vec<(u64, &str, &str)>) {
    let mut syms = Vec::with_capacity(200_000);
    let mut stext = None;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(a), Some(t), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if !matches!(t, "t" | "T" | "w" | "W") {
            continue;
        }
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if addr == 0 {
            continue;
        }
        if name == "_text" && stext.is_none() {
            stext = Some(addr);
        }
        let module = it
            .next()
            .map(|m| m.trim_start_matches('[').trim_end_matches(']'))
            .unwrap_or("");
        syms.push((addr, name, module));
    }
    syms.sort_unstable_by_key(|x| x.0);
    (stext, syms)
}

/// The result of looking addresses up in one kallsyms file.
pub(crate) struct Lookup {
    /// Address of `_text`, if the file lists it.
    pub text_addr: Option<u64>,
    /// Per address asked: the symbol at or below it, None when below every symbol.
    pub name: Vec<Option<String>>,
    /// Per address asked: its module ("" for the kernel image), None with `name`.
    pub module: Vec<Option<String>>,
}

/// Read the kallsyms file at `path` and look every address of `addrs` up.
pub(crate) fn lookup(path: &str, addrs: &[u64]) -> std::io::Result<Lookup> {
    let text = std::fs::read_to_string(path)?;
    let (text_addr, syms) = parse_kallsyms(&text);
    let mut name = Vec::with_capacity(addrs.len());
    let mut module = Vec::with_capacity(addrs.len());
    for &a in addrs {
        let i = syms.partition_point(|s| s.0 <= a);
        let hit = (i > 0).then(|| &syms[i - 1]);
        name.push(hit.map(|s| s.1.to_string()));
        module.push(hit.map(|s| s.2.to_string()));
    }
    Ok(Lookup {
        text_addr,
        name,
        module,
    })
}
