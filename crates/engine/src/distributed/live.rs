//! Progress of a distributed plan while it runs: what its scans read so far on every node.
//!
//! The workers' plan metrics reach the coordinator only when their tasks end. So each scan
//! of a distributed plan carries the query's id and adds what it reads to that query's live
//! totals on the node that runs it (`trawl_storage::live_scans`). While the plan runs and
//! someone watches its progress, a [`Watch`] asks every node for those totals at the pace
//! of progress reports: this node directly, the others through a [`ScanProbe`] (a call to
//! their worker service). A node's totals never go down in what the watch reports, even if
//! a later answer is lower or missing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use trawl_storage::ScanTotals;
use url::Url;

/// How often a watch asks the nodes.
pub const POLL_EVERY: Duration = Duration::from_millis(250);
/// How long a watch waits for a node's answer before asking again next time.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// Asks another query node what the scans of a query read there so far.
#[async_trait]
pub trait ScanProbe: Send + Sync {
    async fn scanned(&self, node: &Url, query: &str) -> Result<ScanTotals, String>;
}

/// Asks the nodes about one query until dropped; [`Watch::totals`] is the sum of their
/// latest answers.
pub(crate) struct Watch {
    totals: Arc<Mutex<ScanTotals>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    pub(crate) fn start(query: String, own: Url, nodes: Vec<Url>, probe: Option<Arc<dyn ScanProbe>>) -> Watch {
        let totals = Arc::new(Mutex::new(ScanTotals::default()));
        let shared = Arc::clone(&totals);
        let task = tokio::spawn(async move {
            let mut latest: HashMap<Url, ScanTotals> = HashMap::new();
            let mut ticker = tokio::time::interval(POLL_EVERY);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let own_totals = trawl_storage::live_scans::live(&query);
                let entry = latest.entry(own.clone()).or_default();
                *entry = entry.max(own_totals);
                if let Some(probe) = &probe {
                    let asks = nodes.iter().filter(|node| **node != own).map(|node| {
                        let probe = Arc::clone(probe);
                        let query = query.as_str();
                        async move {
                            let answer = tokio::time::timeout(ANSWER_WITHIN, probe.scanned(node, query)).await;
                            (node, answer)
                        }
                    });
                    for (node, answer) in futures::future::join_all(asks).await {
                        match answer {
                            Ok(Ok(totals)) => {
                                let entry = latest.entry(node.clone()).or_default();
                                *entry = entry.max(totals);
                            }
                            Ok(Err(error)) => {
                                tracing::debug!(node = %node, %error, "a query node did not tell its scans' progress")
                            }
                            Err(_) => {
                                tracing::debug!(node = %node, "a query node did not tell its scans' progress in time")
                            }
                        }
                    }
                }
                let sum = latest.values().fold(ScanTotals::default(), |sum, totals| sum + *totals);
                if let Ok(mut totals) = shared.lock() {
                    *totals = sum;
                }
            }
        });
        Watch { totals, task }
    }

    /// The totals so far, updated as answers arrive.
    pub(crate) fn totals(&self) -> Arc<Mutex<ScanTotals>> {
        Arc::clone(&self.totals)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
