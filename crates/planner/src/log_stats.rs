//! `otel-log-stats`: an overview of a logs table, one row per service and severity: `service`
//! (`resource['service.name']`), `severity` (`severity_text`), `count`, `share` of all rows,
//! `first_seen` and `last_seen` (`timestamp`), and `templates`, the distinct log templates of
//! `body` (`log_template_hash`, estimated as `dcount` does). Most rows first.

use trawl_common::{ErrorCode, TrawlError};
use trawl_kql::span::Span;

use crate::context::{Planner, Tabular};
use crate::rolling::INPUT;

/// The log columns the overview reads.
const LOG_COLUMNS: [&str; 4] = [trawl_common::TIME_COLUMN, "severity_text", "body", "resource"];

impl Planner<'_> {
    pub(crate) fn otel_log_stats(&mut self, input: Tabular, span: Span) -> Result<Tabular, TrawlError> {
        if let Some(missing) = LOG_COLUMNS.iter().find(|c| input.column_type(c).is_none()) {
            return Err(self.error(
                ErrorCode::UnknownColumn,
                span,
                format!(
                    "otel-log-stats reads logs: the input has no column '{missing}' \
                     (it needs timestamp, severity_text, body and resource)"
                ),
            ));
        }
        let text = format!(
            "{INPUT} | summarize ['count'] = count(), first_seen = min(timestamp), last_seen = max(timestamp), \
             templates = dcount(log_template_hash(tostring(body))) \
             by service = tostring(resource['service.name']), severity = severity_text \
             | extend __k = 1 \
             | join kind=inner ({INPUT} | summarize __total = count() | extend __k = 1) on __k \
             | project service, severity, ['count'], share = todouble(['count']) / __total, first_seen, last_seen, templates \
             | order by ['count'] desc, service asc, severity asc"
        );
        self.lowered(input, "otel-log-stats", &text, span)
    }
}
