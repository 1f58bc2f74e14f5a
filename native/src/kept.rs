//! What the push readers and the log's writer keep across pushes (a fleet sends the
//! same frames and stacks every window): a map bounded by its entries and by the
//! bytes they hold, which starts over when either is passed (a push may hold 2**19
//! distinct frames of names up to 16 KB).
//!
//! The lock is held only for lookups and inserts, never while Python runs (a Python
//! call may let another thread take the interpreter lock and wait for this one), and
//! what a reset drops is dropped after it is released.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::PyList;
use rustc_hash::FxHashMap as HashMap;

/// Bytes an entry holds beyond the text it is given for: the map's slot, the Python
/// objects' headers.
pub(crate) const ENTRY_BYTES: usize = 200;

pub(crate) struct Kept<K, V> {
    map: Mutex<Option<(HashMap<K, V>, usize)>>, // the entries, the bytes they hold
    max_entries: usize,
    max_bytes: usize,
}

impl<K: Hash + Eq, V: Clone> Kept<K, V> {
    pub(crate) const fn new(max_entries: usize, max_bytes: usize) -> Self {
        Kept {
            map: Mutex::new(None),
            max_entries,
            max_bytes,
        }
    }

    /// The kept value of each key.
    pub(crate) fn get<Q>(&self, keys: impl Iterator<Item = impl Borrow<Q>>) -> Vec<Option<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut guard = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let (map, _) = guard.get_or_insert_with(Default::default);
        keys.map(|k| map.get(k.borrow()).cloned()).collect()
    }

    /// Keep `made` (key, value, the bytes of text it holds).
    pub(crate) fn keep(&self, made: Vec<(K, V, usize)>) {
        if made.is_empty() {
            return;
        }
        let dropped = {
            let mut guard = self.map.lock().unwrap_or_else(|e| e.into_inner());
            let (map, bytes) = guard.get_or_insert_with(Default::default);
            let cost: usize = made.iter().map(|(_, _, b)| b + ENTRY_BYTES).sum();
            let full = map.len() + made.len() > self.max_entries || *bytes + cost > self.max_bytes;
            let dropped = if full {
                *bytes = 0;
                std::mem::take(map)
            } else {
                HashMap::default()
            };
            *bytes += cost;
            map.extend(made.into_iter().map(|(k, v, _)| (k, v)));
            dropped
        };
        drop(dropped); // outside the lock
    }
}

/// Python objects kept by a text key, so that a push gets the same object as the one
/// before for the same frame.
pub(crate) type KeptObjects = Kept<String, Arc<Py<PyAny>>>;

impl KeptObjects {
    /// The kept object of each key as a Python list; those not kept yet made by
    /// `make(index)` and kept, each holding `text_bytes` per byte of its key.
    pub(crate) fn objects<'py>(
        &self,
        py: Python<'py>,
        keys: &[&str],
        text_bytes: usize,
        mut make: impl FnMut(usize) -> PyResult<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut found = self.get::<str>(keys.iter().copied());
        let mut made = Vec::new();
        for (i, (slot, key)) in found.iter_mut().zip(keys).enumerate() {
            if slot.is_none() {
                let object = Arc::new(make(i)?);
                made.push((key.to_string(), object.clone(), text_bytes * key.len()));
                *slot = Some(object);
            }
        }
        self.keep(made);
        let found: Vec<Py<PyAny>> = found
            .into_iter()
            .flatten()
            .map(|o| o.clone_ref(py))
            .collect();
        Ok(PyList::new_bound(py, found))
    }
}
