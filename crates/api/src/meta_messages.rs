//! The meta service's argument checks and the catalog records as its messages.

use tonic::Status;
use trawl_auth::token::Role;
use trawl_catalog::{Change, ObjectKind, ObjectRecord, Principal, SavedQuery, SsoSettings};
use trawl_proto::meta as pb;

use crate::meta_grpc::Caller;

pub(crate) fn principal_message(p: &Principal) -> pb::Principal {
    pb::Principal {
        id: p.id.clone(),
        name: p.name.clone(),
        kind: p.kind.as_str().to_string(),
        role: p.role.as_str().to_string(),
        created_at: p.created_at,
        sign_in: p.sign_in().to_string(),
    }
}

pub(crate) fn valid_name(name: &str, what: &str) -> Result<(), Status> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if ok {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "{what} '{name}' must be 1-128 letters, digits, '_', '-', '.' or '@'"
        )))
    }
}

pub(crate) fn role_argument(text: &str) -> Result<Role, Status> {
    if text.is_empty() {
        return Ok(Role::Observer);
    }
    Role::parse(text)
        .ok_or_else(|| Status::invalid_argument(format!("unknown role '{text}': admin, maintainer or observer")))
}

pub(crate) const CATALOG_CHANGERS: &[Role] = &[Role::Admin, Role::Maintainer];

pub(crate) fn kind_argument(text: &str) -> Result<ObjectKind, Status> {
    match text {
        "database" => Ok(ObjectKind::Database),
        "table" => Ok(ObjectKind::Table),
        "view" => Ok(ObjectKind::View),
        other => Err(Status::invalid_argument(format!(
            "unknown kind '{other}': database, table or view"
        ))),
    }
}

pub(crate) fn database_argument(text: &str) -> &str {
    if text.is_empty() {
        trawl_common::DEFAULT_DATABASE
    } else {
        text
    }
}

/// The database and name a request means: a database is named by `name` (or `database`),
/// other objects by both.
pub(crate) fn object_target<'a>(kind: ObjectKind, database: &'a str, name: &'a str) -> (&'a str, &'a str) {
    match kind {
        ObjectKind::Database if !name.is_empty() => (name, ""),
        ObjectKind::Database => (database_argument(database), ""),
        _ => (database_argument(database), name),
    }
}

/// The outcome of a catalog change as a gRPC answer.
pub(crate) fn change_status(change: Change, what: &str) -> Result<(), Status> {
    match change {
        Change::Done => Ok(()),
        Change::NotFound => Err(Status::not_found(format!("{what} does not exist"))),
        Change::Exists { deleted: false } => Err(Status::already_exists(format!("{what} exists already"))),
        Change::Exists { deleted: true } => Err(Status::already_exists(format!(
            "{what} was deleted and can still be restored; restore it, or wait until it is purged"
        ))),
        Change::HasChildren(children) => Err(Status::failed_precondition(format!(
            "{what} has live children ({}); delete them first or delete with cascade",
            children.join(", ")
        ))),
        Change::Refused(reason) => Err(Status::failed_precondition(format!("{what}: {reason}"))),
    }
}

pub(crate) fn object_message(record: &ObjectRecord) -> pb::CatalogObject {
    pb::CatalogObject {
        kind: record.kind.as_str().to_string(),
        database: record.database.clone(),
        name: record.name.clone(),
        retention_seconds: record
            .retention_nanos
            .map_or(0, |n| u64::try_from(n / 1_000_000_000).unwrap_or(0)),
        members: record.members.clone(),
        created_at: record.created_at,
        deleted_at: record.deleted_at.unwrap_or(0),
    }
}

pub(crate) fn retention_nanos(seconds: u64) -> Result<Option<i64>, Status> {
    match seconds {
        0 => Ok(None),
        seconds => i64::try_from(seconds)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000_000))
            .map(Some)
            .ok_or_else(|| Status::invalid_argument("retention_seconds is too large")),
    }
}

/// Shortest password accepted.
pub(crate) const MIN_PASSWORD_LEN: usize = 8;

/// Longest query text (and description) a saved query holds.
pub(crate) const MAX_SAVED_QUERY_BYTES: usize = 64 << 10;

/// The name of the signed-in caller; saved queries belong to users and service accounts,
/// not to cluster services.
pub(crate) fn signed_user(caller: &Caller) -> Result<&str, Status> {
    match caller {
        Caller::Signed(identity) => Ok(&identity.username),
        _ => Err(Status::permission_denied("saved queries belong to signed-in callers")),
    }
}

/// A folder path with its parts trimmed and empty parts dropped (`" a//b/ "` is `a/b`).
pub(crate) fn normalized_folder(text: &str) -> Result<String, Status> {
    let parts: Vec<&str> = text.split('/').map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.len() > 16 || parts.iter().any(|p| p.chars().count() > 100) {
        return Err(Status::invalid_argument(
            "a folder is at most 16 levels of at most 100 characters",
        ));
    }
    Ok(parts.join("/"))
}

/// SSO settings for an answer: the secret stays inside.
pub(crate) fn sso_message(s: &SsoSettings) -> pb::SsoSettings {
    pb::SsoSettings {
        enabled: s.enabled,
        issuer: s.issuer.clone(),
        client_id: s.client_id.clone(),
        client_secret: String::new(),
        client_secret_set: !s.client_secret.is_empty(),
        redirect_url: s.redirect_url.clone(),
        scopes: s.scopes.clone(),
        username_claim: s.username_claim.clone(),
        new_user_role: s.new_user_role.clone(),
        label: s.label.clone(),
    }
}

pub(crate) fn saved_query_message(q: &SavedQuery) -> pb::SavedQuery {
    pb::SavedQuery {
        id: q.id.clone(),
        name: q.name.clone(),
        folder: q.folder.clone(),
        query: q.query.clone(),
        database: q.database.clone(),
        time_range: q.time_range.clone(),
        description: q.description.clone(),
        owner: q.owner.clone(),
        created_at: q.created_at,
        updated_at: q.updated_at,
    }
}
