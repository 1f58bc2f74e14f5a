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

/// One kallsyms file's text symbols, kept between lookups: the kernel writes
/// /proc/kallsyms out anew at every read (~45 ms for 120k symbols here), and
/// the agent looks new kernel addresses up every window. Names live in one
/// arena (~5 MB for this kernel) rather than a String each.
struct Table {
    path: String,
    /// What the file was when read (current_key).
    key: String,
    text_addr: Option<u64>,
    addrs: Vec<u64>,
    /// (start, end) of the name and of the module in `arena`
    spans: Vec<(u32, u32, u32, u32)>,
    arena: String,
}

impl Table {
    fn read(path: &str, key: String) -> std::io::Result<Table> {
        let text = std::fs::read_to_string(path)?;
        let (text_addr, syms) = parse_kallsyms(&text);
        let mut table = Table {
            path: path.to_string(),
            key,
            text_addr,
            addrs: Vec::with_capacity(syms.len()),
            spans: Vec::with_capacity(syms.len()),
            arena: String::new(),
        };
        for (addr, name, module) in syms {
            let start = table.arena.len() as u32;
            table.arena.push_str(name);
            let middle = table.arena.len() as u32;
            table.arena.push_str(module);
            table.addrs.push(addr);
            table
                .spans
                .push((start, middle, middle, table.arena.len() as u32));
        }
        table.arena.shrink_to_fit();
        Ok(table)
    }

    fn symbol(&self, addr: u64) -> Option<(&str, &str)> {
        let i = self.addrs.partition_point(|&a| a <= addr);
        (i > 0).then(|| {
            let (a, b, c, d) = self.spans[i - 1];
            (
                &self.arena[a as usize..b as usize],
                &self.arena[c as usize..d as usize],
            )
        })
    }
}

static TABLE: std::sync::Mutex<Option<Table>> = std::sync::Mutex::new(None);

/// For /proc/kallsyms: each loaded module's name and address (its reference
/// counts change as it is used, its symbols do not); for a file: its size and
/// modification time.
fn current_key(path: &str) -> String {
    if !path.starts_with("/proc/") {
        return match std::fs::metadata(path) {
            Ok(m) => format!("{}:{:?}", m.len(), m.modified().ok()),
            Err(_) => String::new(),
        };
    }
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let mut key = String::with_capacity(modules.len() / 2);
    for line in modules.lines() {
        let mut fields = line.split_ascii_whitespace();
        key.push_str(fields.next().unwrap_or(""));
        key.push_str(fields.last().unwrap_or(""));
        key.push('\n');
    }
    key
}

/// Look every address of `addrs` up in the kallsyms file at `path`, read
/// again only when it is another file or the kernel's modules changed.
pub(crate) fn lookup(path: &str, addrs: &[u64]) -> std::io::Result<Lookup> {
    let key = current_key(path);
    let mut kept = TABLE.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(&*kept, Some(t) if t.path == path && t.key == key) {
        *kept = None; // one table at a time: free the old one before reading
        *kept = Some(Table::read(path, key)?);
    }
    let table = kept.as_ref().expect("just read");
    let found: Vec<Option<(&str, &str)>> = addrs.iter().map(|&a| table.symbol(a)).collect();
    Ok(Lookup {
        text_addr: table.text_addr,
        name: found.iter().map(|s| s.map(|s| s.0.to_string())).collect(),
        module: found.iter().map(|s| s.map(|s| s.1.to_string())).collect(),
    })
}
