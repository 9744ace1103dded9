//! The object store `ship` writes to: S3, or a store that speaks its protocol (MinIO, Ceph,
//! R2, moto), through the `object_store` crate, configured as AWS's own tools are, from the
//! environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, or web
//! identity (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`), ECS and EKS container
//! credentials, else the instance's role; `AWS_REGION` (or `AWS_DEFAULT_REGION`); and the
//! endpoint `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, as AWS's SDKs read them (an `http://`
//! endpoint is allowed: it was asked for).
//!
//! Every operation is synchronous for its caller: the store drives `object_store`'s futures
//! on a current-thread tokio runtime of its own. Each failure is one line ([`StoreError`])
//! that says what is wrong and what to do, and whether it concerns the whole store (no
//! credentials, no such bucket, an endpoint that cannot be reached) or one object.

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::client::{HttpError, HttpErrorKind};
use object_store::path::Path as Key;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    PutPayload, RetryConfig,
};
use std::future::Future;
use std::time::Duration;

/// The user metadata under which `ship` stores an object's SHA-256 (`x-amz-meta-sha256`).
pub(crate) const SHA256_METADATA: &str = "sha256";

/// Where `ship` writes: a bucket and a prefix inside it, from `s3://BUCKET/PREFIX`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Destination {
    /// The bucket.
    pub(crate) bucket: String,
    /// The prefix, without a leading or trailing `/` (empty: the bucket's root).
    pub(crate) prefix: String,
}

impl Destination {
    /// Parses `s3://BUCKET` or `s3://BUCKET/PREFIX` (a trailing `/` is the same prefix).
    pub(crate) fn parse(url: &str) -> Result<Destination, String> {
        let Some(rest) = url.strip_prefix("s3://") else {
            return Err(format!("{url}: not an s3:// address; give the destination as s3://BUCKET/PREFIX"));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("{url}: no bucket; give the destination as s3://BUCKET/PREFIX"));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|part| part.is_empty() || part == "." || part == "..") && !prefix.is_empty() {
            return Err(format!("{url}: the prefix has an empty, `.` or `..` part; give it as a/b/c"));
        }
        Ok(Destination { bucket: bucket.to_owned(), prefix: prefix.to_owned() })
    }

    /// The key of `name` under the prefix.
    pub(crate) fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() { name.to_owned() } else { format!("{}/{name}", self.prefix) }
    }

    /// The `s3://` address of `key`.
    pub(crate) fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }
}

/// Whether a failure concerns the whole store or one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Nothing can be written until it is mended: credentials, the bucket, the endpoint.
    Store,
    /// This object, this time (a transient failure that outlasted its retries, a refusal of
    /// this object alone).
    Object,
}

/// A failure of the store, as the one line the user reads.
#[derive(Clone, Debug)]
pub(crate) struct StoreError {
    pub(crate) line: String,
    pub(crate) scope: Scope,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

/// What the store holds under a key: its size and, when `ship` wrote it, its SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Remote {
    pub(crate) size: u64,
    pub(crate) sha256: Option<String>,
}

/// What a create-only put did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// The object was written.
    Created,
    /// An object was already there: nothing was written.
    Exists,
}

/// The S3 store of a [`Destination`], with the runtime that drives its requests.
pub(crate) struct Store {
    runtime: tokio::runtime::Runtime,
    s3: AmazonS3,
    pub(crate) destination: Destination,
    /// Where requests go, for messages: the endpoint variable's value, or AWS's S3.
    endpoint: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("destination", &self.destination).field("endpoint", &self.endpoint).finish()
    }
}

/// An environment variable's value, when it is set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether some source of credentials is configured in the environment, else why not (the
/// instance's role is asked last, unless `AWS_EC2_METADATA_DISABLED` says there is none).
fn credentials() -> Result<(), String> {
    let key = var("AWS_ACCESS_KEY_ID");
    let secret = var("AWS_SECRET_ACCESS_KEY");
    match (key.is_some(), secret.is_some()) {
        (true, true) => return Ok(()),
        (true, false) => return Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not; set both".to_owned()),
        (false, true) => return Err("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not; set both".to_owned()),
        (false, false) => {}
    }
    let other =
        ["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"];
    if other.iter().any(|v| var(v).is_some()) {
        return Ok(());
    }
    if var("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(no_credentials());
    }
    // The instance's metadata service gives a role's credentials on EC2. Off EC2 nothing
    // answers there, and the client would wait for it through its retries: a connection
    // that cannot be made within a second says at once that there is none.
    let endpoint = var("AWS_METADATA_ENDPOINT")
        .or_else(|| var("AWS_EC2_METADATA_SERVICE_ENDPOINT"))
        .unwrap_or_else(|| "http://169.254.169.254".to_owned());
    let authority = endpoint.split("://").nth(1).unwrap_or(&endpoint).split('/').next().unwrap_or_default().to_owned();
    let with_port = if authority.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        authority
    } else {
        format!("{authority}:80")
    };
    let reachable = std::net::ToSocketAddrs::to_socket_addrs(&with_port)
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|address| std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok());
    if reachable { Ok(()) } else { Err(no_credentials()) }
}

/// The line for no credentials at all.
fn no_credentials() -> String {
    "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (event-dump reads no ~/.aws files: \
     `eval \"$(aws configure export-credentials --format env)\"` exports a profile's), or run where a role gives them"
        .to_owned()
}

impl Store {
    /// The store of `destination`, configured from the environment. Nothing is asked of the
    /// store yet ([`Store::check`] does).
    pub(crate) fn from_env(destination: Destination) -> Result<Store, StoreError> {
        let fatal = |line: String| StoreError { line, scope: Scope::Store };
        credentials().map_err(fatal)?;
        let endpoint = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")).or_else(|| var("AWS_ENDPOINT"));
        let region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).unwrap_or_else(|| "us-east-1".to_owned());
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&destination.bucket)
            .with_region(&region)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(200),
                    max_backoff: Duration::from_secs(5),
                    base: 2.0,
                },
                max_retries: 4,
                retry_timeout: Duration::from_secs(60),
            })
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    // A segment's upload may take minutes on a slow link.
                    .with_timeout(Duration::from_secs(600)),
            );
        if let Some(endpoint) = &endpoint {
            builder = builder.with_endpoint(endpoint);
            if endpoint.starts_with("http://") {
                builder = builder.with_allow_http(true);
            }
        }
        let shown = endpoint.clone().unwrap_or_else(|| format!("s3.{region}.amazonaws.com"));
        let s3 = builder
            .build()
            .map_err(|e| fatal(format!("cannot use s3://{}: {}", destination.bucket, first_line(&e))))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fatal(format!("cannot start the HTTP client: {e}")))?;
        Ok(Store { runtime, s3, destination, endpoint: shown })
    }

    /// Runs `future` to its end on the store's runtime.
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// The runtime, for the signal watcher.
    pub(crate) fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    /// Asks the store for the first page of keys under the prefix: the credentials, the
    /// bucket and the endpoint are right, or the line says which is not.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        use futures_util::StreamExt;
        let prefix = Key::from(self.destination.prefix.as_str());
        let first = self.block_on(async { self.s3.list(Some(&prefix)).next().await });
        match first {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(self.explain(&e, &self.destination.url(&self.destination.prefix))),
        }
    }

    /// What is under `key`: `None` when nothing is.
    pub(crate) fn head(&self, key: &str) -> Result<Option<Remote>, StoreError> {
        let location = Key::from(key);
        let options = GetOptions { head: true, ..GetOptions::default() };
        match self.block_on(self.s3.get_opts(&location, options)) {
            Ok(got) => {
                let sha256 = got.attributes.get(&Attribute::Metadata(SHA256_METADATA.into())).map(|v| v.to_string());
                Ok(Some(Remote { size: got.meta.size, sha256 }))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.explain(&e, &self.destination.url(key))),
        }
    }

    /// The bytes under `key`.
    pub(crate) fn get(&self, key: &str) -> Result<Bytes, StoreError> {
        let location = Key::from(key);
        self.block_on(async { self.s3.get(&location).await?.bytes().await })
            .map_err(|e| self.explain(&e, &self.destination.url(key)))
    }

    /// Writes `bytes` under `key` only if nothing is there (a create-only put: `If-None-Match:
    /// *`), with their SHA-256 as the object's metadata. A put that fails for a reason that may
    /// pass (a timeout, a dropped connection, a server's 5xx that outlasted the client's own
    /// retries) is tried again, up to three times in all, after 1 s and 4 s: being create-only,
    /// a second try never writes twice, and finds the first one's object if it landed.
    pub(crate) fn put_new(&self, key: &str, bytes: Bytes, sha256: &str) -> Result<Put, StoreError> {
        let location = Key::from(key);
        let mut attributes = Attributes::new();
        attributes.insert(Attribute::Metadata(SHA256_METADATA.into()), sha256.to_owned().into());
        attributes.insert(Attribute::ContentType, "application/octet-stream".into());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let options = PutOptions { mode: PutMode::Create, attributes: attributes.clone(), ..PutOptions::default() };
            let payload = PutPayload::from_bytes(bytes.clone());
            match self.block_on(self.s3.put_opts(&location, payload, options)) {
                Ok(_) => return Ok(Put::Created),
                Err(object_store::Error::AlreadyExists { .. }) => return Ok(Put::Exists),
                Err(e) => {
                    let error = self.explain(&e, &self.destination.url(key));
                    if attempt >= 3 || !transient(&e) {
                        return Err(error);
                    }
                    std::thread::sleep(Duration::from_secs(if attempt == 1 { 1 } else { 4 }));
                }
            }
        }
    }

    /// The one line for `error`, met at `url`.
    fn explain(&self, error: &object_store::Error, url: &str) -> StoreError {
        let text = chain(error);
        let bucket = &self.destination.bucket;
        let endpoint = &self.endpoint;
        let store = |line: String| StoreError { line, scope: Scope::Store };
        // The instance's role, asked last, was not there (or answered no).
        if text.contains("169.254.169.254") || text.contains("169.254.170.2") || text.contains("/latest/api/token") {
            return store(no_credentials());
        }
        if text.contains("NoSuchBucket") {
            return store(format!(
                "no bucket `{bucket}` at {endpoint}: create it (`aws s3 mb s3://{bucket}`) or correct the destination"
            ));
        }
        if text.contains("InvalidAccessKeyId") {
            return store(format!("{endpoint} does not know the access key AWS_ACCESS_KEY_ID names; correct it"));
        }
        if text.contains("SignatureDoesNotMatch") {
            return store(format!(
                "{endpoint} refuses the request's signature: AWS_SECRET_ACCESS_KEY does not belong to AWS_ACCESS_KEY_ID"
            ));
        }
        if text.contains("ExpiredToken") || text.contains("TokenRefreshRequired") {
            return store(format!(
                "{endpoint}: the session's credentials have expired; renew them (AWS_SESSION_TOKEN)"
            ));
        }
        if text.contains("PermanentRedirect")
            || text.contains("AuthorizationHeaderMalformed")
            || text.contains("redirect without LOCATION")
        {
            return store(format!(
                "bucket `{bucket}` is in another region than {endpoint}'s: set AWS_REGION to its region"
            ));
        }
        if matches!(error, object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. })
            || text.contains("AccessDenied")
            || text.contains("403 Forbidden")
        {
            return store(format!(
                "access to {url} denied by {endpoint}: the credentials may not list and write there (s3:ListBucket, \
                 s3:GetObject, s3:PutObject)"
            ));
        }
        match http_kind(error) {
            Some(HttpErrorKind::Connect) => {
                let why = if text.contains("dns error") || text.contains("failed to lookup") {
                    "its name does not resolve"
                } else if text.contains("Connection refused") || text.contains("onnection refused") {
                    "connection refused"
                } else {
                    "cannot connect"
                };
                store(format!("cannot reach {endpoint}: {why} (check AWS_ENDPOINT_URL, or the network)"))
            }
            Some(HttpErrorKind::Timeout) => {
                StoreError { line: format!("{url}: {endpoint} did not answer in time"), scope: Scope::Object }
            }
            _ => StoreError { line: format!("{url}: {}", first_line(error)), scope: Scope::Object },
        }
    }
}

/// Whether `error` may pass if the request is made again: no answer, or the server's fault.
fn transient(error: &object_store::Error) -> bool {
    if let Some(kind) = http_kind(error) {
        return matches!(
            kind,
            HttpErrorKind::Connect | HttpErrorKind::Request | HttpErrorKind::Timeout | HttpErrorKind::Interrupted
        );
    }
    let text = chain(error);
    ["500", "502", "503", "504", "InternalError", "SlowDown", "ServiceUnavailable", "RequestTimeout"]
        .iter()
        .any(|t| text.contains(t))
}

/// The kind of the HTTP error at the root of `error`, if there is one.
fn http_kind(error: &object_store::Error) -> Option<HttpErrorKind> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(http) = e.downcast_ref::<HttpError>() {
            return Some(http.kind());
        }
        source = e.source();
    }
    None
}

/// `error` and its sources, as one text to search.
fn chain(error: &object_store::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        text.push_str(" | ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// The first line of an error's message (some carry a server's XML body).
fn first_line(error: &impl std::fmt::Display) -> String {
    error.to_string().lines().next().unwrap_or_default().trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_parse_as_bucket_and_prefix() {
        let d = Destination::parse("s3://fleet/traces/host-1/").unwrap();
        assert_eq!((d.bucket.as_str(), d.prefix.as_str()), ("fleet", "traces/host-1"));
        assert_eq!(d.key("a/000001.evt"), "traces/host-1/a/000001.evt");
        assert_eq!(d.url(&d.key("x")), "s3://fleet/traces/host-1/x");
        let root = Destination::parse("s3://fleet").unwrap();
        assert_eq!((root.prefix.as_str(), root.key("x").as_str()), ("", "x"));
        assert_eq!(Destination::parse("s3://fleet/").unwrap(), root);
        for bad in ["fleet/traces", "s3:///traces", "s3://fleet/a//b", "s3://fleet/a/../b", "https://fleet/x"] {
            assert!(Destination::parse(bad).is_err(), "{bad}");
        }
    }
}
