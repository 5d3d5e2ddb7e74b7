//! The web UI's files, embedded in the binary, and the router that serves them.
//!
//! `ui/dist` is what `npm ci && npm run build` in `ui/` makes; it is checked in, so building
//! the binary needs no Node (docs/decisions/011-web-ui.md). The gateway serves these files at
//! `/`: an asset under `/assets/` has a content hash in its name and is cached for good;
//! any other path that names no file is a page of the single-page app, answered with
//! `index.html` (never cached, so a new binary's UI shows on the next load).

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(RustEmbed)]
#[folder = "../../ui/dist"]
struct Files;

/// What the UI's pages may load: only this origin's scripts, styles the editor adds at run
/// time, workers from this origin, images inline.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; \
     object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/// Serves the UI for every GET or HEAD path no other route of the router it is merged into
/// takes (use it as the fallback).
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().fallback(serve)
}

/// Whether a file of this type is worth compressing (text, scripts, JSON, SVG, WebAssembly).
fn compressible(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.contains("javascript")
        || mime.contains("json")
        || mime.contains("svg")
        || mime.contains("wasm")
}

/// Whether the request takes gzip (`Accept-Encoding` lists it, or `*`, with a weight above 0).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let weight = parts
                .find_map(|p| p.strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()))
                .unwrap_or(1.0);
            (name.eq_ignore_ascii_case("gzip") || name == "*") && weight > 0.0
        })
}

/// The gzip form of file `name`, made on its first request and kept (the files never change
/// while the binary runs; the editor's language service alone is 8 MB of script, 1.3 MB
/// compressed).
async fn gzipped(name: &str, data: Vec<u8>) -> Option<Arc<[u8]>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<[u8]>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok()?.get(name) {
        return Some(found.clone());
    }
    let compressed = tokio::task::spawn_blocking(move || {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut encoder, &data)?;
        encoder.finish()
    })
    .await
    .ok()?
    .ok()?;
    let compressed: Arc<[u8]> = compressed.into();
    cache.lock().ok()?.insert(name.to_string(), compressed.clone());
    Some(compressed)
}

/// Whether this binary holds the UI (a checkout without `ui/dist` builds one without it).
pub fn present() -> bool {
    Files::get("index.html").is_some()
}

/// The app's page (`index.html`), as any page path gets it.
pub async fn page(headers: &HeaderMap) -> Response {
    serve(Method::GET, Uri::from_static("/"), headers.clone()).await
}

async fn serve(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return (StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD are served here").into_response();
    }
    let path = uri.path().trim_start_matches('/');
    if path.starts_with("api/") {
        return (StatusCode::NOT_FOUND, "no such API").into_response();
    }
    let (name, immutable) = match Files::get(path) {
        Some(_) if !path.is_empty() => (path, path.starts_with("assets/")),
        // A missing asset is missing; any other path is a page of the app.
        _ if path.starts_with("assets/") || looks_like_a_file(path) => {
            return (StatusCode::NOT_FOUND, "no such file").into_response();
        }
        _ => ("index.html", false),
    };
    let Some(file) = Files::get(name) else {
        return (
            StatusCode::NOT_FOUND,
            "this binary was built without the web UI (ui/dist was empty); the APIs work",
        )
            .into_response();
    };
    let etag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mime = file.metadata.mimetype().to_string();
    let compress = compressible(&mime);
    let mut gzip = false;
    let mut response = if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag))
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else if method == Method::HEAD {
        Response::new(Body::empty())
    } else if compress
        && accepts_gzip(&headers)
        && let Some(zipped) = gzipped(name, file.data.to_vec()).await
    {
        gzip = true;
        Response::new(Body::from(axum::body::Bytes::from_owner(zipped)))
    } else {
        Response::new(Body::from(file.data.into_owned()))
    };
    let headers = response.headers_mut();
    if gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if compress {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&mime) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// A last path segment with an extension names a file, not a page.
fn looks_like_a_file(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|last| last.contains('.'))
}

#[cfg(test)]
mod tests {
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;

    async fn get(path: &str, etag: Option<&str>) -> Response {
        get_with(path, etag, None).await
    }

    async fn get_with(path: &str, etag: Option<&str>, encoding: Option<&str>) -> Response {
        let mut request = Request::get(path);
        if let Some(etag) = etag {
            request = request.header(header::IF_NONE_MATCH, etag);
        }
        if let Some(encoding) = encoding {
            request = request.header(header::ACCEPT_ENCODING, encoding);
        }
        match router::<()>()
            .oneshot(request.body(Body::empty()).unwrap_or_default())
            .await
        {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    #[test]
    fn gzip_is_taken_unless_weighed_zero() {
        let accepts = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
            );
            accepts_gzip(&headers)
        };
        assert!(accepts("gzip, deflate, br"));
        assert!(accepts("br;q=1.0, GZIP;q=0.5"));
        assert!(accepts("*"));
        assert!(!accepts("gzip;q=0"));
        assert!(!accepts("br, deflate"));
        assert!(!accepts(""));
    }

    #[tokio::test]
    async fn pages_are_the_app_and_files_are_files() {
        let missing = get("/assets/nothing-here.js", None).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert_eq!(get("/favicon-none.ico", None).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(get("/api/unknown", None).await.status(), StatusCode::NOT_FOUND);
        if !present() {
            return;
        }
        for page in ["/", "/explore", "/admin/accounts"] {
            let response = get(page, None).await;
            assert_eq!(response.status(), StatusCode::OK, "{page}");
            assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
            assert!(response.headers().contains_key(header::CONTENT_SECURITY_POLICY));
            let etag = response.headers()[header::ETAG]
                .to_str()
                .unwrap_or_default()
                .to_string();
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            assert!(String::from_utf8_lossy(&body).contains("<div id=\"root\">"), "{page}");
            assert_eq!(get(page, Some(&etag)).await.status(), StatusCode::NOT_MODIFIED);
        }
        let asset = Files::iter()
            .filter(|name| name.starts_with("assets/") && name.ends_with(".js"))
            .max_by_key(|name| Files::get(name).map_or(0, |file| file.data.len()));
        if let Some(asset) = asset {
            let response = get(&format!("/{asset}"), None).await;
            assert_eq!(response.status(), StatusCode::OK);
            assert!(
                response.headers()[header::CACHE_CONTROL]
                    .to_str()
                    .unwrap_or_default()
                    .contains("immutable")
            );
            assert!(
                response.headers()[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap_or_default()
                    .contains("javascript")
            );
            let plain = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes().len())
                .unwrap_or_default();
            // Browsers that take gzip get it, smaller.
            let zipped = get_with(&format!("/{asset}"), None, Some("gzip, deflate, br")).await;
            assert_eq!(
                zipped.headers().get(header::CONTENT_ENCODING).map(|v| v.as_bytes()),
                Some(&b"gzip"[..])
            );
            let zipped_len = zipped
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes().len())
                .unwrap_or_default();
            assert!(zipped_len > 0 && zipped_len < plain, "{zipped_len} < {plain}");
        }
    }
}
