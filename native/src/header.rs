//! Checks on a perf.data file before the parser sees it: magic, pipe mode, and
//! the bounds of every header section, so that a corrupt or truncated file
//! gives an error message instead of aborting the process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Open `path` and check it is a seekable perf.data file whose header fits.
///
/// Returns the file rewound to its start. Errors starting with "cannot open"
/// mean the file could not be opened (the glue raises OSError for those);
/// every other error means it is not readable perf.data (ValueError).
pub(crate) fn open_checked(path: &str) -> Result<File, String> {
    let mut file = File::open(path).map_err(|e| format!("cannot open perf.data: {e}"))?;
    let mut head = [0u8; 16];
    let n = file
        .read(&mut head)
        .map_err(|e| format!("cannot read perf.data: {e}"))?;
    if n < 8 {
        return Err("empty or truncated file (no perf.data header)".into());
    }
    if &head[..8] != b"PERFILE2" && &head[..8] != b"2ELIFREP" {
        return Err("not a perf.data file (bad magic)".into());
    }
    if n >= 16 && head[8..16] == [16, 0, 0, 0, 0, 0, 0, 0] {
        return Err(
            "pipe-mode perf.data (recorded with `perf record -o -`); record to a file instead"
                .into(),
        );
    }
    if &head[..8] == b"PERFILE2" {
        validate_header(&mut file)?;
    }
    file.rewind()
        .map_err(|e| format!("cannot read perf.data: {e}"))?;
    Ok(file)
}

/// Bounds-check the header, the attribute and feature sections of a
/// little-endian perf.data file before linux-perf-data sees it: it trusts
/// counts and sizes from the file for allocations, so a corrupt or truncated
/// file could otherwise abort the process instead of giving an error.
fn validate_header(file: &mut File) -> Result<(), String> {
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read perf.data: {e}"))?
        .len();
    let mut read_at = |off: u64, n: usize| -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; n];
        file.seek(SeekFrom::Start(off))
            .and_then(|_| file.read_exact(&mut buf))
            .map_err(|_| format!("truncated perf.data ({len} bytes)"))?;
        Ok(buf)
    };
    let h = read_at(0, 104)?;
    let u = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or_default());
    let u32at = |b: &[u8], o: usize| -> Option<u64> {
        b.get(o..o + 4)
            .map(|x| u32::from_le_bytes(x.try_into().unwrap_or_default()) as u64)
    };
    if u(&h, 8) != 104 {
        return Err(format!(
            "unsupported perf.data header (size {}, expected 104)",
            u(&h, 8)
        ));
    }
    let fits = |off: u64, size: u64| off.checked_add(size).is_some_and(|end| end <= len);
    let attr_size = u(&h, 16);
    let (attrs_off, attrs_size) = (u(&h, 24), u(&h, 32));
    let (data_off, data_size) = (u(&h, 40), u(&h, 48));
    let (types_off, types_size) = (u(&h, 56), u(&h, 64));
    for (name, off, size) in [
        ("attribute", attrs_off, attrs_size),
        ("data", data_off, data_size),
        ("event type", types_off, types_size),
    ] {
        if !fits(off, size) {
            return Err(format!(
                "truncated perf.data: the {name} section ends past the end of the file ({len} bytes)"
            ));
        }
    }
    if attrs_size > 0 && (!(16..=65536).contains(&attr_size) || attrs_size % attr_size != 0) {
        return Err("corrupt perf.data header (attribute size)".into());
    }
    if attrs_size > 0 {
        let attrs = read_at(attrs_off, attrs_size as usize)?;
        for i in 0..(attrs_size / attr_size) as usize {
            let end = (i + 1) * attr_size as usize;
            if !fits(u(&attrs, end - 16), u(&attrs, end - 8)) {
                return Err("corrupt perf.data header (event id section)".into());
            }
        }
    }
    let bits: Vec<u64> = (0..4).map(|i| u(&h, 72 + 8 * i)).collect();
    let features: Vec<u32> = (0..256u32)
        .filter(|b| bits[(b / 64) as usize] & (1u64 << (b % 64)) != 0)
        .collect();
    let table_off = data_off + data_size;
    if !fits(table_off, features.len() as u64 * 16) {
        return Err(format!(
            "truncated perf.data: the feature table is missing ({len} bytes; was perf record interrupted?)"
        ));
    }
    let table = read_at(table_off, features.len() * 16)?;
    for (i, &feat) in features.iter().enumerate() {
        let (off, size) = (u(&table, 16 * i), u(&table, 16 * i + 8));
        if !fits(off, size) {
            return Err(format!(
                "truncated perf.data: header feature {feat} ends past the end of the file ({len} bytes)"
            ));
        }
        if size > (64 << 20) {
            continue;
        }
        let sect = read_at(off, size as usize)?;
        let bad = || format!("corrupt perf.data header (feature {feat})");
        // Walk one perf_header_string at `pos`; returns the position after it.
        let string_end = |pos: u64| -> Option<u64> {
            let n = u32at(&sect, pos as usize)?;
            let end = pos.checked_add(4)?.checked_add(n)?;
            (end <= size).then_some(end)
        };
        match feat {
            // hostname, osrelease, version, arch, cpudesc, cpuid
            3..=6 | 8 | 9 => {
                string_end(0).ok_or_else(bad)?;
            }
            // cmdline: u32 nr, then nr strings
            11 => {
                let nr = u32at(&sect, 0).ok_or_else(bad)?;
                let mut pos = 4u64;
                for _ in 0..nr {
                    pos = string_end(pos).ok_or_else(bad)?;
                }
            }
            // event_desc: u32 nr, u32 attr_size, then per event:
            // attr, u32 nr_ids, string, u64 ids[nr_ids]
            12 => {
                let nr = u32at(&sect, 0).ok_or_else(bad)?;
                let asz = u32at(&sect, 4).ok_or_else(bad)?;
                let mut pos = 8u64;
                for _ in 0..nr {
                    pos = pos
                        .checked_add(asz)
                        .filter(|&p| p <= size)
                        .ok_or_else(bad)?;
                    let nr_ids = u32at(&sect, pos as usize).ok_or_else(bad)?;
                    pos = string_end(pos + 4).ok_or_else(bad)?;
                    pos = pos
                        .checked_add(nr_ids * 8)
                        .filter(|&p| p <= size)
                        .ok_or_else(bad)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
