//! [`Directory`] in the SQLite catalog file.

use async_trait::async_trait;
use sqlx::Row as _;
use sqlx::any::AnyRow;
use trawl_common::role::Role;

use crate::directory::{
    AccessTokenRecord, Directory, GatewayKeyRecord, IngestTokenRecord, Principal, PrincipalKind, SignalTables,
};
use crate::{CatalogError, Result, SqlCatalog};

pub(crate) const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS ingest_tokens (
        id TEXT PRIMARY KEY,
        secret_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        database TEXT NOT NULL,
        table_name TEXT NOT NULL,
        allow_table_override BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT,
        signal_tables TEXT)",
    "CREATE TABLE IF NOT EXISTS principals (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        role TEXT NOT NULL,
        password_hash TEXT,
        created_at BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS access_tokens (
        id TEXT PRIMARY KEY,
        principal_id TEXT NOT NULL REFERENCES principals (id),
        secret_hash TEXT NOT NULL,
        expires_at BIGINT,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT)",
    "CREATE TABLE IF NOT EXISTS settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS gateway_keys (
        key_id TEXT PRIMARY KEY,
        public_key TEXT NOT NULL,
        created_at BIGINT NOT NULL)",
];

fn corrupt(what: &str, value: &str) -> CatalogError {
    CatalogError::Corrupt(format!("unknown {what} '{value}'"))
}

/// Columns added to tables of older catalog files: (table, column, statement adding it).
pub(crate) const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    (
        "ingest_tokens",
        "signal_tables",
        "ALTER TABLE ingest_tokens ADD COLUMN signal_tables TEXT",
    ),
    (
        "principals",
        "sso_subject",
        "ALTER TABLE principals ADD COLUMN sso_subject TEXT",
    ),
];

/// A token row; statements name their columns, so one prepared before a column was added never
/// reads a different shape.
fn ingest_token(row: &AnyRow) -> Result<IngestTokenRecord> {
    let signal_tables: Option<String> = row.try_get("signal_tables")?;
    let signal_tables = match signal_tables {
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| CatalogError::Corrupt(format!("ingest token signal tables: {e}")))?,
        None => SignalTables::default(),
    };
    Ok(IngestTokenRecord {
        signal_tables,
        id: row.try_get("id")?,
        secret_hash: row.try_get("secret_hash")?,
        name: row.try_get("name")?,
        database: row.try_get("database")?,
        table: row.try_get("table_name")?,
        allow_table_override: row.try_get::<i64, _>("allow_table_override")? != 0,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

fn access_token(row: &AnyRow) -> Result<AccessTokenRecord> {
    Ok(AccessTokenRecord {
        id: row.try_get("id")?,
        principal_id: row.try_get("principal_id")?,
        secret_hash: row.try_get("secret_hash")?,
        expires_at: row.try_get("expires_at")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

fn principal(row: &AnyRow) -> Result<Principal> {
    let kind: String = row.try_get("kind")?;
    let role: String = row.try_get("role")?;
    Ok(Principal {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        kind: PrincipalKind::parse(&kind).ok_or_else(|| corrupt("principal kind", &kind))?,
        role: Role::parse(&role).ok_or_else(|| corrupt("role", &role))?,
        password_hash: row.try_get("password_hash")?,
        sso_subject: row.try_get("sso_subject")?,
        created_at: row.try_get("created_at")?,
    })
}

#[async_trait]
impl Directory for SqlCatalog {
    async fn add_ingest_token(&self, token: &IngestTokenRecord) -> Result<()> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        sqlx::query(
            "INSERT INTO ingest_tokens (id, secret_hash, name, database, table_name, allow_table_override, signal_tables,
                 created_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&token.id)
        .bind(&token.secret_hash)
        .bind(&token.name)
        .bind(&token.database)
        .bind(&token.table)
        .bind(i64::from(token.allow_table_override))
        .bind(
            (!token.signal_tables.is_empty())
                .then(|| serde_json::to_string(&token.signal_tables))
                .transpose()
                .map_err(|e| CatalogError::Corrupt(format!("ingest token signal tables: {e}")))?,
        )
        .bind(token.created_at)
        .bind(token.revoked_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn ingest_token(&self, id: &str) -> Result<Option<IngestTokenRecord>> {
        if let Some(known) = self.remembered.ingest_token(id) {
            return Ok(Some(known));
        }
        let generation = self.remembered.generation(crate::remembered::Area::Accounts);
        let found = sqlx::query(
            "SELECT id, secret_hash, name, database, table_name, allow_table_override, signal_tables, created_at, revoked_at
             FROM ingest_tokens WHERE id = $1",
        )
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(ingest_token)
            .transpose()?;
        if let Some(found) = &found {
            self.remembered.keep_ingest_token(found, generation);
        }
        Ok(found)
    }

    async fn ingest_tokens(&self) -> Result<Vec<IngestTokenRecord>> {
        sqlx::query(
            "SELECT id, secret_hash, name, database, table_name, allow_table_override, signal_tables, created_at, revoked_at
             FROM ingest_tokens ORDER BY created_at, id",
        )
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(ingest_token)
            .collect()
    }

    async fn revoke_ingest_token(&self, id: &str, at: i64) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE ingest_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(at)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn revoke_access_token(&self, id: &str, at: i64) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE access_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
            .bind(at)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn restore_ingest_token(&self, id: &str, not_before: i64) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE ingest_tokens SET revoked_at = NULL WHERE id = $1 AND revoked_at >= $2")
            .bind(id)
            .bind(not_before)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn add_principal(&self, p: &Principal) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query(
            "INSERT INTO principals (id, name, kind, role, password_hash, sso_subject, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(&p.id)
        .bind(&p.name)
        .bind(p.kind.as_str())
        .bind(p.role.as_str())
        .bind(&p.password_hash)
        .bind(&p.sso_subject)
        .bind(p.created_at)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn principal(&self, id: &str) -> Result<Option<Principal>> {
        if let Some(known) = self.remembered.principal(id) {
            return Ok(Some(known));
        }
        let generation = self.remembered.generation(crate::remembered::Area::Accounts);
        let found = sqlx::query("SELECT * FROM principals WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(principal)
            .transpose()?;
        if let Some(found) = &found {
            self.remembered.keep_principal(found, generation);
        }
        Ok(found)
    }

    async fn principal_by_name(&self, name: &str) -> Result<Option<Principal>> {
        sqlx::query("SELECT * FROM principals WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(principal)
            .transpose()
    }

    async fn principals(&self) -> Result<Vec<Principal>> {
        sqlx::query("SELECT * FROM principals ORDER BY name")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(principal)
            .collect()
    }

    async fn set_role(&self, id: &str, role: Role) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE principals SET role = $1 WHERE id = $2")
            .bind(role.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_password_hash(&self, id: &str, hash: &str) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE principals SET password_hash = $1 WHERE id = $2 AND kind = 'user'")
            .bind(hash)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn switch_to_sso(&self, id: &str) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query("UPDATE principals SET password_hash = NULL WHERE id = $1 AND kind = 'user'")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_sso_subject(&self, id: &str, subject: &str) -> Result<bool> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        let done = sqlx::query(
            "UPDATE principals SET sso_subject = $1 WHERE id = $2 AND kind = 'user' AND password_hash IS NULL",
        )
        .bind(subject)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn setting(&self, key: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("SELECT value FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?)
    }

    async fn set_setting(&self, key: &str, value: &str, now: i64) -> Result<()> {
        sqlx::query(
            "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn add_setting(&self, key: &str, value: &str, now: i64) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING",
        )
        .bind(key)
        .bind(value)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn add_access_token(&self, token: &AccessTokenRecord) -> Result<()> {
        let _writing = self.remembered.writing(crate::remembered::Area::Accounts);
        sqlx::query(
            "INSERT INTO access_tokens (id, principal_id, secret_hash, expires_at, created_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&token.id)
        .bind(&token.principal_id)
        .bind(&token.secret_hash)
        .bind(token.expires_at)
        .bind(token.created_at)
        .bind(token.revoked_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn access_token(&self, id: &str) -> Result<Option<AccessTokenRecord>> {
        if let Some(known) = self.remembered.token(id) {
            return Ok(Some(known));
        }
        let generation = self.remembered.generation(crate::remembered::Area::Accounts);
        let found = sqlx::query(
            "SELECT id, principal_id, secret_hash, expires_at, created_at, revoked_at FROM access_tokens WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(access_token)
        .transpose()?;
        if let Some(found) = &found {
            self.remembered.keep_token(found, generation);
        }
        Ok(found)
    }

    async fn access_tokens_of(&self, principal_id: &str) -> Result<Vec<AccessTokenRecord>> {
        sqlx::query(
            "SELECT id, principal_id, secret_hash, expires_at, created_at, revoked_at FROM access_tokens
             WHERE principal_id = $1 ORDER BY created_at DESC",
        )
        .bind(principal_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(access_token)
        .collect()
    }

    async fn register_gateway_key(&self, key: &GatewayKeyRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO gateway_keys (key_id, public_key, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(&key.key_id)
        .bind(&key.public_key)
        .bind(key.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn gateway_keys(&self) -> Result<Vec<GatewayKeyRecord>> {
        sqlx::query("SELECT key_id, public_key, created_at FROM gateway_keys ORDER BY created_at")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(GatewayKeyRecord {
                    key_id: row.try_get("key_id")?,
                    public_key: row.try_get("public_key")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }
}
