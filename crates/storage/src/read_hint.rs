//! Telling a store which bytes a scan is going to read, so that it can fetch them while the
//! scan works through what it has.
//!
//! A scan reads a segment one row group at a time, and each read waits for the one before it:
//! from a cold disk, every read of a row group's column chunks pays the disk's latency in turn
//! (the benchmark's "errors per 5 minutes" waited about 90 ms for them after a restart with the
//! page cache dropped). Once a scan has read the first of a segment's row groups, it knows
//! which column chunks the others will need; [`crate::checked::CheckedReader`] tells the store
//! through [`ReadHint`], and a store on the local disk asks the kernel to read them ahead
//! ([`crate::local_reads::LocalReads`]), so the disk works on many of them at once.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::execution::config::SessionConfig;
use object_store::path::Path;

/// A store that can start fetching byte ranges before they are asked for.
pub trait ReadHint: Send + Sync + fmt::Debug {
    /// `ranges` of `location` will be read soon, in this order. Returns at once: the store
    /// fetches them (or not) in the background, and a failure is only a missed hint.
    fn will_read(&self, location: &Path, ranges: Vec<Range<u64>>);
}

/// The segment store's [`ReadHint`], carried by a session's configuration to the scans it
/// plans (the engine's sessions, and a cluster worker's).
#[derive(Debug, Clone)]
pub struct ReadHints(pub Arc<dyn ReadHint>);

impl ReadHints {
    /// The hint of the sessions configured by `config`, if they have one.
    pub fn of(config: &SessionConfig) -> Option<Arc<dyn ReadHint>> {
        config.get_extension::<ReadHints>().map(|hints| Arc::clone(&hints.0))
    }
}

/// A hint that records what it is told (tests).
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Told(std::sync::Mutex<Vec<(Path, Vec<Range<u64>>)>>);

#[cfg(test)]
impl Told {
    /// What it was told, in order.
    pub(crate) fn hints(&self) -> Vec<(Path, Vec<Range<u64>>)> {
        self.0.lock().map(|told| told.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
impl ReadHint for Told {
    fn will_read(&self, location: &Path, ranges: Vec<Range<u64>>) {
        if let Ok(mut told) = self.0.lock() {
            told.push((location.clone(), ranges));
        }
    }
}
