//! The kind of telemetry a request carries. The face that decodes a request names it; it
//! travels with the rows to ingest, which keeps each signal's rows in segments of their own.

/// Logs, traces or metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    Logs,
    Traces,
    Metrics,
}

impl Signal {
    /// The signal's name in metrics labels and messages.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Logs => "logs",
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
        }
    }

    /// The signal [`Signal::name`] names.
    pub fn from_name(name: &str) -> Option<Signal> {
        match name {
            "logs" => Some(Signal::Logs),
            "traces" => Some(Signal::Traces),
            "metrics" => Some(Signal::Metrics),
            _ => None,
        }
    }

    /// What a row of this signal is: a log record, a span or a metric point (the name
    /// segments of this signal are grouped under in merges).
    pub fn row_kind(self) -> &'static str {
        match self {
            Signal::Logs => "logs",
            Signal::Traces => "spans",
            Signal::Metrics => "metrics",
        }
    }
}
