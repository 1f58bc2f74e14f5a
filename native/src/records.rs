//! The event records of a little-endian perf.data file in time order, read in
//! place from a memory map.
//!
//! Why not linux-perf-data's record iterator: it copies every record into a
//! buffer of its own and sorts those buffers, which was a third of reading a
//! large perf.data. Here only (time, offset) pairs are sorted, with the same
//! rounds as the crate (perf's FINISHED_ROUND: a round never overlaps the one
//! two rounds back), so the records come out in exactly the crate's order,
//! and the pages already handed out are dropped from memory as the reading
//! goes on, so resident memory stays bounded by about two rounds. The file's
//! position follows the reading, for `import`'s progress.
//!
//! Files this does not read (compressed or AUX-trace records, simpleperf's
//! files without rounds, big-endian files) are left to the crate's iterator:
//! `for_each_in_time_order` says so (a compressed record is found early: perf
//! writes only the synthesized records of the start uncompressed).

use std::fs::File;
use std::io::{Seek, SeekFrom};

use rustc_hash::FxHashMap as HashMap;

use linux_perf_data::linux_perf_event_reader::{
    get_record_id, get_record_identifier, get_record_timestamp, AttrFlags, Endianness, RawData,
    RawEventRecord, RecordIdParseInfo, RecordParseInfo, RecordType,
};
use linux_perf_data::{AttributeDescription, Feature, PerfFile};
use memmap2::{Advice, Mmap, UncheckedAdvice};

use crate::sigbus::Guard;

type Le = byteorder::LittleEndian;

const HEADER_SIZE: usize = 8;
const PERF_RECORD_FINISHED_ROUND: u32 = 68;
const PERF_RECORD_AUXTRACE: u32 = 71;
const PERF_RECORD_COMPRESSED: u32 = 81;
const PERF_RECORD_COMPRESSED2: u32 = 83;
const PAGE: usize = 4096;

/// How a record's event (attribute) is found, as the crate does it.
enum EventOf {
    OnlyOne,
    /// Every event keeps its id at the same place.
    SameLayout(RecordIdParseInfo),
    /// Every event samples IDENTIFIER; the flag is SAMPLE_ID_ALL.
    Identifier(bool),
}

/// The parts of the file the records need: its map, where the data section
/// lies, and per event how its records are parsed.
struct Records {
    guard: Guard, // first: dropped before the map is unmapped
    map: Mmap,
    start: usize,
    end: usize,
    parse_infos: Vec<RecordParseInfo>,
    event_of_id: HashMap<u64, usize>,
    event_of: EventOf,
}

/// Calls `each(event index, record)` for every event record of the data
/// section, in time order. Returns false for a file this reader leaves to the
/// crate (see the module docs), perhaps after some records: the caller starts over.
pub(crate) fn for_each_in_time_order(
    file: &File,
    perf_file: &PerfFile,
    mut each: impl FnMut(usize, RawEventRecord<'_>),
) -> Result<bool, String> {
    let Some(records) = Records::open(file, perf_file)? else {
        return Ok(false);
    };
    let read = read_in_time_order(&records, file, &mut each);
    // the last page a cut leaves reads zeros past the new end, without a SIGBUS
    let shrunk = file
        .metadata()
        .is_ok_and(|m| m.len() < records.map.len() as u64);
    if records.guard.faulted() || shrunk {
        return Err(
            "perf.data was truncated while it was read (is something still writing it?)".into(),
        );
    }
    read
}

fn read_in_time_order(
    records: &Records,
    file: &File,
    mut each: impl FnMut(usize, RawEventRecord<'_>),
) -> Result<bool, String> {
    let _ = records.map.advise(Advice::Sequential);
    // (time, offset) of the records not yet handed out; the crate's sort key
    let mut pending: Vec<(Option<u64>, usize)> = Vec::new();
    let mut pending_before_previous_max = 0usize;
    let mut previous_max: (Option<u64>, usize) = (None, 0);
    let mut current_max: (Option<u64>, usize) = (None, 0);
    let mut released = records.start - records.start % PAGE;
    let mut offset = records.start;
    while offset < records.end {
        let (record_type, size) = records.header_at(offset)?;
        if matches!(
            record_type,
            PERF_RECORD_AUXTRACE | PERF_RECORD_COMPRESSED | PERF_RECORD_COMPRESSED2
        ) {
            return Ok(false);
        }
        if record_type == PERF_RECORD_FINISHED_ROUND {
            pending.sort_by_key(|&(time, at)| (time, at));
            for &(_, at) in &pending[..pending_before_previous_max] {
                records.hand_out(at, &mut each);
            }
            pending.drain(..pending_before_previous_max);
            previous_max = current_max;
            pending_before_previous_max = pending.len();
            let keep_from = pending.iter().map(|&(_, at)| at).min().unwrap_or(offset);
            released = records.release(released, keep_from);
            // where `import`'s progress looks (formats/read_position.py): the file
            // position, which reading a map does not move
            let _ = (&*file).seek(SeekFrom::Start(offset as u64));
        } else if RecordType(record_type).is_builtin_type() {
            let key = (records.time_of(offset, record_type, size), offset);
            if key <= previous_max {
                pending_before_previous_max += 1;
            } else if key > current_max {
                current_max = key;
            }
            pending.push(key);
        }
        offset += size;
    }
    pending.sort_by_key(|&(time, at)| (time, at));
    for &(_, at) in &pending {
        records.hand_out(at, &mut each);
    }
    Ok(true)
}

impl Records {
    /// None for a big-endian or simpleperf file.
    fn open(file: &File, perf_file: &PerfFile) -> Result<Option<Self>, String> {
        let simpleperf = perf_file
            .feature_section_data(Feature::SIMPLEPERF_META_INFO)
            .is_some();
        if simpleperf || perf_file.endian() != Endianness::LittleEndian {
            return Ok(None);
        }
        // SAFETY: the file is only read; it is checked against its header's sizes
        // before (header::open_checked), and perf does not write a finished file.
        let map = unsafe { Mmap::map(file) }.map_err(|e| format!("cannot read perf.data: {e}"))?;
        let guard = Guard::new(map.as_ptr(), map.len()); // before the first read of the map
        let word = |at: usize| {
            map.get(at..at + 8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()) as usize)
        };
        let (Some(start), Some(size)) = (word(40), word(48)) else {
            return Err("truncated perf.data (no full header)".into());
        };
        let end = start.saturating_add(size);
        if end > map.len() {
            return Err(format!("truncated perf.data ({} bytes)", map.len()));
        }
        let attributes = perf_file.event_attributes();
        let parse_infos: Vec<RecordParseInfo> = attributes
            .iter()
            .map(|a| RecordParseInfo::new(&a.attr, Endianness::LittleEndian))
            .collect();
        let mut event_of_id = HashMap::default();
        for (index, AttributeDescription { event_ids, .. }) in attributes.iter().enumerate() {
            for id in event_ids {
                event_of_id.insert(*id, index);
            }
        }
        let event_of = event_of(attributes, &parse_infos);
        Ok(Some(Records {
            guard,
            map,
            start,
            end,
            parse_infos,
            event_of_id,
            event_of,
        }))
    }

    /// (type, size) of the record at `offset`.
    fn header_at(&self, offset: usize) -> Result<(u32, usize), String> {
        let header = self
            .map
            .get(offset..offset + HEADER_SIZE)
            .filter(|_| offset + HEADER_SIZE <= self.end);
        let Some(h) = header else {
            return Err("truncated or corrupt perf.data (a record runs past the data)".into());
        };
        let record_type = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let size = u16::from_le_bytes([h[6], h[7]]) as usize;
        if size < HEADER_SIZE || offset + size > self.end {
            return Err("truncated or corrupt perf.data (a record of a wrong size)".into());
        }
        Ok((record_type, size))
    }

    fn body(&self, offset: usize, size: usize) -> RawData<'_> {
        RawData::Single(&self.map[offset + HEADER_SIZE..offset + size])
    }

    fn event_index(&self, record_type: RecordType, data: RawData<'_>) -> usize {
        let id = match &self.event_of {
            EventOf::OnlyOne => return 0,
            EventOf::SameLayout(info) => get_record_id::<Le>(record_type, data, info),
            EventOf::Identifier(all) => get_record_identifier::<Le>(record_type, data, *all),
        };
        id.and_then(|id| self.event_of_id.get(&id).copied())
            .unwrap_or(0)
    }

    fn time_of(&self, offset: usize, record_type: u32, size: usize) -> Option<u64> {
        let record_type = RecordType(record_type);
        let data = self.body(offset, size);
        let event = self.event_index(record_type, data);
        get_record_timestamp::<Le>(record_type, data, &self.parse_infos[event])
    }

    fn hand_out(&self, offset: usize, each: &mut impl FnMut(usize, RawEventRecord<'_>)) {
        let h = &self.map[offset..offset + HEADER_SIZE];
        let record_type = RecordType(u32::from_le_bytes([h[0], h[1], h[2], h[3]]));
        let misc = u16::from_le_bytes([h[4], h[5]]);
        let size = u16::from_le_bytes([h[6], h[7]]) as usize;
        let data = self.body(offset, size);
        let event = self.event_index(record_type, data);
        let record = RawEventRecord::new(record_type, misc, data, self.parse_infos[event]);
        each(event, record);
    }

    /// Drops the pages before `keep_from` (all handed out) from memory; returns
    /// where the pages still mapped in begin.
    fn release(&self, released: usize, keep_from: usize) -> usize {
        let upto = keep_from - keep_from % PAGE;
        if upto > released {
            // SAFETY: a read-only file map: dropped pages read back from the file
            // if touched again, and none before `keep_from` is read again.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    UncheckedAdvice::DontNeed,
                    released,
                    upto - released,
                )
            };
            return upto;
        }
        released
    }
}

fn event_of(attributes: &[AttributeDescription], parse_infos: &[RecordParseInfo]) -> EventOf {
    let Some((first, rest)) = parse_infos.split_first() else {
        return EventOf::OnlyOne;
    };
    if rest.is_empty() {
        EventOf::OnlyOne
    } else if rest.iter().all(|p| p.id_parse_info == first.id_parse_info) {
        EventOf::SameLayout(first.id_parse_info)
    } else {
        // PerfFileReader::parse_file refused files whose events differ otherwise
        EventOf::Identifier(attributes[0].attr.flags.contains(AttrFlags::SAMPLE_ID_ALL))
    }
}
