//! Which server the client talks to. The user gives several endpoints; the
//! client uses one at a time and moves on when it fails: to the leader a
//! follower names, else to the next endpoint in the list (wrapping around).
//! A generation number makes a failure reported by many calls at once move
//! the client only once.

use crate::error::Error;
use std::sync::Mutex;
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Endpoint;

/// A connection as calls use it: every request on it carries the client's
/// bearer token, added here and nowhere else.
pub(crate) type Channel = InterceptedService<tonic::transport::Channel, Bearer>;

/// Adds `authorization: Bearer <secret>` to every request (nothing without
/// a token).
#[derive(Clone, Debug, Default)]
pub(crate) struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    /// The interceptor for `secret` (`None`: no token). Fails for a secret
    /// that cannot be a header value.
    pub fn new(secret: Option<&str>) -> Result<Bearer, Error> {
        let Some(secret) = secret else {
            return Ok(Bearer(None));
        };
        let value =
            format!("Bearer {}", secret.trim())
                .parse()
                .map_err(|_| Error::InvalidArgument {
                    field: "auth_token".into(),
                    reason: "must be printable ASCII (a token from leasehold token create)".into(),
                })?;
        Ok(Bearer(Some(value)))
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The endpoints and the one in use.
#[derive(Debug)]
pub(crate) struct Endpoints {
    /// Every endpoint the user gave, normalized to URLs.
    urls: Vec<String>,
    /// How to open a connection to one of them.
    dial: Dial,
    /// The bearer token every call carries.
    bearer: Bearer,
    current: Mutex<Current>,
}

/// How a connection is opened and kept: the connect bound and the HTTP/2
/// keep-alive pings (see [`ClientOptions`](crate::ClientOptions)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dial {
    /// Bound on connecting.
    pub connect_timeout: Duration,
    /// Ping interval (and unanswered-ping bound); `None`: no pings.
    pub keep_alive_interval: Option<Duration>,
}

#[derive(Debug)]
struct Current {
    /// Index in `urls`; a leader address outside the list keeps the index
    /// of the endpoint that named it, so the next failover continues there.
    index: usize,
    url: String,
    channel: tonic::transport::Channel,
    /// Bumped at every move.
    generation: u64,
    /// The endpoint that last failed without naming a leader.
    unreachable: Option<String>,
}

/// What [`Endpoints::fail_over`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moved {
    /// To the leader a follower named: retry at once.
    ToLeader,
    /// To the next endpoint: retry after a backoff.
    ToNext,
    /// Nothing: another call moved first (or the hint was unusable).
    Already,
}

/// The endpoint a call should use.
#[derive(Clone, Debug)]
pub(crate) struct InUse {
    /// The channel.
    pub channel: Channel,
    /// Its URL, for messages.
    pub url: String,
    /// Pass back to [`Endpoints::fail_over`].
    pub generation: u64,
}

impl Endpoints {
    /// Validates `raw` and connects to the first reachable endpoint.
    pub async fn connect<I, S>(raw: I, dial: Dial) -> Result<Endpoints, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = raw
            .into_iter()
            .map(|u| u.as_ref().trim().to_owned())
            .filter(|u| !u.is_empty())
            .map(|u| normalize(&u))
            .collect();
        if urls.is_empty() {
            return Err(Error::InvalidArgument {
                field: "endpoints".into(),
                reason: "no endpoint given; pass e.g. http://127.0.0.1:7420".into(),
            });
        }
        for url in &urls {
            endpoint(url, dial)?;
        }
        let mut failures = Vec::new();
        for (index, url) in urls.iter().enumerate() {
            match endpoint(url, dial)?.connect().await {
                Ok(channel) => {
                    let current = Current {
                        index,
                        url: url.clone(),
                        channel,
                        generation: 0,
                        unreachable: None,
                    };
                    return Ok(Endpoints {
                        urls,
                        dial,
                        bearer: Bearer::default(),
                        current: Mutex::new(current),
                    });
                }
                Err(e) => failures.push(format!("{url} ({})", root_cause(&e))),
            }
        }
        Err(Error::Unavailable {
            message: format!(
                "cannot reach any endpoint: tried {}; is `leasehold serve` running there?",
                failures.join(", ")
            ),
        })
    }

    /// The same endpoints, every call carrying `bearer`.
    pub fn with_bearer(self, bearer: Bearer) -> Endpoints {
        Endpoints { bearer, ..self }
    }

    /// The endpoint to use now.
    pub fn in_use(&self) -> InUse {
        let current = self.current.lock().expect("endpoints lock");
        InUse {
            channel: InterceptedService::new(current.channel.clone(), self.bearer.clone()),
            url: current.url.clone(),
            generation: current.generation,
        }
    }

    /// The endpoint of `generation` failed: move to `leader_addr` if given
    /// (and it is not the endpoint that last failed unreachable: followers
    /// keep naming a dead leader until they elect a new one), else to the
    /// next endpoint. A no-op if another call already moved. The new channel
    /// connects lazily, on first use. Returns [`Moved::ToLeader`] when the
    /// move follows a fresh hint, which is worth trying at once.
    pub fn fail_over(&self, generation: u64, leader_addr: Option<&str>) -> Moved {
        let mut current = self.current.lock().expect("endpoints lock");
        if current.generation != generation {
            return Moved::Already;
        }
        let hint = leader_addr
            .map(normalize)
            .filter(|url| current.unreachable.as_ref() != Some(url));
        if leader_addr.is_none() {
            current.unreachable = Some(current.url.clone());
        }
        let (index, url, moved) = match hint {
            Some(url) => (current.index, url, Moved::ToLeader),
            None => {
                let next = (current.index + 1) % self.urls.len();
                (next, self.urls[next].clone(), Moved::ToNext)
            }
        };
        // Every listed URL was validated at connect; a leader address that
        // does not parse leaves the client where it is.
        let Ok(endpoint) = endpoint(&url, self.dial) else {
            return Moved::Already;
        };
        current.index = index;
        current.url = url;
        current.channel = endpoint.connect_lazy();
        current.generation += 1;
        moved
    }
}

/// Accepts `host:port` as shorthand for `http://host:port`.
pub(crate) fn normalize(url: &str) -> String {
    if url.contains("://") {
        url.to_owned()
    } else {
        format!("http://{url}")
    }
}

fn endpoint(url: &str, dial: Dial) -> Result<Endpoint, Error> {
    Endpoint::from_shared(url.to_owned())
        .map(|e| {
            let e = e.connect_timeout(dial.connect_timeout).tcp_nodelay(true);
            match dial.keep_alive_interval {
                Some(interval) => e
                    .http2_keep_alive_interval(interval)
                    .keep_alive_timeout(interval)
                    .keep_alive_while_idle(true),
                None => e,
            }
        })
        .map_err(|e| Error::InvalidArgument {
            field: "endpoints".into(),
            reason: format!("{url:?} is not a valid URL: {e}"),
        })
}

/// The innermost error's text ("Connection refused (os error 111)").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_host_port_gets_a_scheme() {
        assert_eq!(normalize("127.0.0.1:7420"), "http://127.0.0.1:7420");
        assert_eq!(normalize("https://h:1"), "https://h:1");
    }

    const DIAL: Dial = Dial {
        connect_timeout: Duration::from_secs(1),
        keep_alive_interval: None,
    };

    #[tokio::test]
    async fn an_empty_list_or_a_bad_url_is_refused_before_connecting() {
        let empty: [&str; 0] = [];
        assert!(matches!(
            Endpoints::connect(empty, DIAL).await,
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            Endpoints::connect(["http://bad host:1"], DIAL).await,
            Err(Error::InvalidArgument { .. })
        ));
    }

    #[tokio::test]
    async fn nothing_reachable_lists_what_was_tried() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = dead.local_addr().unwrap();
        drop(dead);
        let error = Endpoints::connect([addr.to_string()], DIAL)
            .await
            .unwrap_err();
        assert!(error.to_string().contains(&addr.to_string()), "{error}");
    }
}
