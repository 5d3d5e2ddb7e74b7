//! The vocabulary of the generated world: services, routes, body templates, severities.

pub(super) const SERVICES: [(&str, &str, &str); 30] = [
    ("frontend", "shop", "nodejs"),
    ("api-gateway", "platform", "go"),
    ("checkout", "shop", "go"),
    ("cart", "shop", "dotnet"),
    ("payment", "shop", "java"),
    ("shipping", "shop", "rust"),
    ("inventory", "shop", "java"),
    ("catalog", "shop", "go"),
    ("search", "shop", "java"),
    ("recommendation", "shop", "python"),
    ("user", "platform", "java"),
    ("auth", "platform", "go"),
    ("notification", "platform", "python"),
    ("email", "platform", "ruby"),
    ("ad", "shop", "java"),
    ("currency", "shop", "cpp"),
    ("quote", "shop", "php"),
    ("fraud-detection", "risk", "python"),
    ("accounting", "finance", "dotnet"),
    ("pricing", "shop", "go"),
    ("review", "shop", "python"),
    ("order", "shop", "java"),
    ("warehouse", "logistics", "java"),
    ("loyalty", "shop", "nodejs"),
    ("session", "platform", "go"),
    ("media", "shop", "rust"),
    ("geo", "platform", "go"),
    ("billing", "finance", "java"),
    ("ledger", "finance", "rust"),
    ("report", "finance", "python"),
];

pub const HOSTS: usize = 200;
pub(super) const HOST_GROUPS: usize = 10;

pub(super) const ROUTE_PATTERNS: [&str; 10] = [
    "/api/v1/{r}",
    "/api/v1/{r}/{id}",
    "/api/v1/{r}/{id}/items",
    "/api/v1/{r}/search",
    "/api/v2/{r}/{id}",
    "/api/v1/{r}/{id}/status",
    "/api/v1/{r}/batch",
    "/internal/{r}/sync",
    "/healthz",
    "/metrics",
];

pub(super) const ENTITIES: [&str; 10] = [
    "order", "cart", "payment", "session", "user", "invoice", "shipment", "product", "token", "report",
];

pub(super) const DEBUG_PATTERNS: [&str; 8] = [
    "cache lookup for {e} {id}: hit",
    "cache lookup for {e} {id}: miss, loading from {table}",
    "serialized {e} {id} in {n} us",
    "acquired lock on {e} {id} after {ms} ms",
    "{e} {id} validated against schema v{n}",
    "fetching {e} {id} from {svc}",
    "query plan for {table}: index scan on {e}_id",
    "retry budget for {svc} while loading {e}: {n} tokens left",
];

pub(super) const INFO_PATTERNS: [&str; 12] = [
    "{method} {route} {status} {ms}ms ({e})",
    "created {e} {id} for {user}",
    "updated {e} {id} ({n} fields changed)",
    "{e} {id} processed in {ms} ms",
    "published {e}.updated event for {e} {id} to {queue}",
    "user {user} viewed {e} {id} from {ip}",
    "scheduled job {e}-cleanup finished: {n} rows deleted in {ms} ms",
    "connection pool for {table} resized to {n} ({e} load)",
    "{e} {id} state changed from pending to active",
    "received {n} {e} records from {svc}",
    "exported {bytes} bytes of {e} data to s3://acme-{e}-archive/{id}",
    "session {id} for {user} refreshed, {e} cache warmed",
];

pub(super) const WARN_PATTERNS: [&str; 8] = [
    "slow request: {method} {route} took {ms} ms ({e})",
    "retrying call to {svc} for {e} {id} (attempt {n} of 5)",
    "{e} {id} not found, falling back to default",
    "rate limit approaching for {user}: {pct}% of quota used on {e} API",
    "lock wait on {table} exceeded {ms} ms while updating {e} {id}, possible deadlock",
    "deprecated field '{e}_legacy_id' used by client {ip}",
    "queue {queue} lag is {n} messages for {e} events",
    "circuit breaker for {svc} half-open after {n} failures on {e} calls",
];

pub(super) const ERROR_PATTERNS: [&str; 8] = [
    "failed to process {e} {id}: upstream {svc} returned {status}",
    "deadlock detected on table {table} while updating {e} {id}, transaction rolled back",
    "timeout after {ms} ms waiting for {svc} ({e} {id})",
    "unhandled exception in {e} handler: NullPointerException at {E}Service.java:{n}",
    "could not connect to {table} database at {ip}:5432 while saving {e}: connection refused",
    "validation failed for {e} {id}: field '{e}_total' must be positive",
    "{method} {route} {status} {ms}ms: internal error in {e} handler",
    "message {id} on {queue} moved to dead-letter queue after {n} attempts ({e})",
];

pub(super) const TABLES: [&str; 8] = [
    "orders",
    "carts",
    "payments",
    "users",
    "sessions",
    "inventory",
    "shipments",
    "ledger_entries",
];
pub(super) const QUEUES: [&str; 5] = [
    "orders.events",
    "payments.events",
    "notifications",
    "audit-log",
    "email-outbox",
];
pub(super) const USER_AGENTS: [&str; 6] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "okhttp/4.12.0",
    "python-requests/2.32.3",
    "Go-http-client/2.0",
];
pub(super) const REGIONS: [&str; 3] = ["eu-west-1", "us-east-1", "ap-southeast-2"];

/// Severity: (text, OTLP number, share).
pub(super) const SEVERITIES: [(&str, i32, f64); 4] = [
    ("ERROR", 17, 0.02),
    ("WARN", 13, 0.06),
    ("INFO", 9, 0.72),
    ("DEBUG", 5, 0.20),
];
