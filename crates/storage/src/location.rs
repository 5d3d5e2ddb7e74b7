//! Where the segment store lives: `--object-store file:///path` (a local directory, the
//! embedded default under the data directory) or `--object-store s3://bucket/prefix` (any
//! S3-compatible service, through `object_store`'s S3 client).
//!
//! S3 settings come from the usual `AWS_*` environment variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//! `AWS_ALLOW_HTTP`, `AWS_VIRTUAL_HOSTED_STYLE_REQUEST`, ...); [`S3Settings`] overrides the
//! endpoint, region and addressing style from flags. Credentials are read from the
//! environment only, never from flags, so they do not show in a process listing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};

use crate::{Result, SegmentStore, StorageError};

/// A parsed `--object-store` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A directory on the local file system.
    Local(PathBuf),
    /// A bucket of an S3-compatible service, and a key prefix inside it (may be empty).
    S3 { bucket: String, prefix: String },
}

impl FromStr for StoreLocation {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<StoreLocation, String> {
        if let Some(path) = text.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "'{text}' is not an absolute file URL; write file:///absolute/path (three slashes)"
                ));
            }
            return Ok(StoreLocation::Local(PathBuf::from(path)));
        }
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if !valid_bucket(bucket) {
                return Err(format!(
                    "'{bucket}' is not a valid bucket name in '{text}' (3 to 63 lowercase letters, digits, dots and hyphens)"
                ));
            }
            let prefix = prefix.trim_matches('/');
            if !prefix.is_empty()
                && prefix
                    .split('/')
                    .any(|part| part.is_empty() || part == "." || part == "..")
            {
                return Err(format!(
                    "the prefix '{prefix}' in '{text}' has an empty, '.' or '..' part"
                ));
            }
            return Ok(StoreLocation::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.to_string(),
            });
        }
        Err(format!(
            "unsupported object store '{text}': expected file:///absolute/path or s3://bucket/prefix"
        ))
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Local(path) => write!(f, "file://{}", path.display()),
            StoreLocation::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            StoreLocation::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// S3's bucket naming rules, loosely: what any S3-compatible service accepts.
fn valid_bucket(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && name.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && name.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric)
}

/// Flag overrides of the `AWS_*` environment for an S3 store.
#[derive(Debug, Clone, Default)]
pub struct S3Settings {
    /// `http(s)://host:port` of an S3-compatible service (default: AWS, or `AWS_ENDPOINT_URL`).
    /// An `http://` endpoint allows plain HTTP.
    pub endpoint: Option<String>,
    /// Region to sign requests for (default: `AWS_REGION`, else `us-east-1`).
    pub region: Option<String>,
    /// Address buckets as `bucket.host` instead of `host/bucket` (path style, the default,
    /// which every S3-compatible server accepts).
    pub virtual_hosted_style: bool,
}

/// How long one object store request may take, and how it is retried. A put that still
/// fails is retried again by ingest's own loop, which holds the request up to its limit
/// (25 s by default), so the client's retries stay short.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const CLIENT_RETRIES: usize = 3;
const CLIENT_RETRY_TIMEOUT: Duration = Duration::from_secs(10);

impl StoreLocation {
    /// Opens the store. A local directory is created if missing; an S3 bucket must exist.
    pub fn open(&self, s3: &S3Settings) -> Result<SegmentStore> {
        match self {
            StoreLocation::Local(path) => SegmentStore::local(path),
            StoreLocation::S3 { bucket, prefix } => {
                let backend = s3_store(bucket, s3)?;
                let backend: Arc<dyn ObjectStore> = if prefix.is_empty() {
                    backend
                } else {
                    Arc::new(PrefixStore::new(backend, ObjectPath::from(prefix.as_str())))
                };
                Ok(SegmentStore::remote(backend))
            }
        }
    }

    /// The local directory, when the store is one.
    pub fn local_path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Local(path) => Some(path),
            StoreLocation::S3 { .. } => None,
        }
    }
}

fn s3_store(bucket: &str, settings: &S3Settings) -> Result<Arc<dyn ObjectStore>> {
    // Client settings one key at a time: `with_client_options` would replace the ones read
    // from the environment (AWS_ALLOW_HTTP, proxies).
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
            format!("{}s", REQUEST_TIMEOUT.as_secs()),
        )
        .with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
            format!("{}s", CONNECT_TIMEOUT.as_secs()),
        );
    if let Some(endpoint) = &settings.endpoint {
        builder = builder
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"));
    } else if std::env::var("AWS_ENDPOINT_URL")
        .or_else(|_| std::env::var("AWS_ENDPOINT"))
        .is_ok_and(|endpoint| endpoint.starts_with("http://"))
        && std::env::var("AWS_ALLOW_HTTP").is_err()
    {
        builder = builder.with_allow_http(true);
    }
    if let Some(region) = &settings.region {
        builder = builder.with_region(region);
    }
    if settings.virtual_hosted_style {
        builder = builder.with_virtual_hosted_style_request(true);
    }
    let store = builder
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(2),
                base: 2.0,
            },
            max_retries: CLIENT_RETRIES,
            retry_timeout: CLIENT_RETRY_TIMEOUT,
        })
        .build()
        .map_err(|e| StorageError::Invalid(format!("cannot configure the S3 store for bucket '{bucket}': {e}")))?;
    Ok(Arc::new(store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_from_their_urls() {
        assert_eq!(
            "file:///var/lib/trawl/segments".parse(),
            Ok(StoreLocation::Local(PathBuf::from("/var/lib/trawl/segments")))
        );
        assert_eq!(
            "s3://telemetry/prod/segments/".parse(),
            Ok(StoreLocation::S3 {
                bucket: "telemetry".into(),
                prefix: "prod/segments".into()
            })
        );
        assert_eq!(
            "s3://telemetry".parse(),
            Ok(StoreLocation::S3 {
                bucket: "telemetry".into(),
                prefix: String::new()
            })
        );
        let location = "s3://telemetry/a/b".parse::<StoreLocation>().map(|l| l.to_string());
        assert_eq!(location.as_deref(), Ok("s3://telemetry/a/b"));
    }

    #[test]
    fn bad_locations_are_refused_with_the_reason() {
        for (text, reason) in [
            ("file://relative/dir", "absolute"),
            ("s3://", "bucket name"),
            ("s3://Upper/prefix", "bucket name"),
            ("s3://-bucket", "bucket name"),
            ("s3://bucket/a//b", "empty"),
            ("s3://bucket/a/../b", "'..'"),
            ("gs://bucket", "unsupported"),
            ("/plain/path", "unsupported"),
        ] {
            let error = text.parse::<StoreLocation>().err();
            assert!(error.as_ref().is_some_and(|e| e.contains(reason)), "{text}: {error:?}");
        }
    }

    #[test]
    fn an_s3_store_is_configured_without_touching_the_network() -> std::result::Result<(), String> {
        let location: StoreLocation = "s3://bucket/prefix".parse()?;
        let settings = S3Settings {
            endpoint: Some("http://127.0.0.1:9".into()),
            region: Some("eu-west-1".into()),
            virtual_hosted_style: false,
        };
        assert!(location.open(&settings).is_ok());
        assert!(location.local_path().is_none());
        Ok(())
    }
}
