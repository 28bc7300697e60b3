//! The drip fault's streaming front. wiremock answers with whole bodies
//! only, so a server whose plan can drip puts this relay on the public
//! listener: every request is passed to the wiremock server behind it, and a
//! response the responder marked `x-replay-fault: drip` goes back to the
//! client `DRIP_CHUNK_BYTES` at a time, `drip_interval_ms` apart: status and
//! headers at once, the body slowly. That is the server a client cannot
//! bound with a connect or header timeout, only with a clock on the whole
//! call. Plans without drip never start this front.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response};

use super::faults::{FaultKind, DRIP_CHUNK_BYTES};
use model::headers::HEADER_FAULT;

/// Request bodies the front accepts (a request is the harness's JSON).
const REQUEST_MAX_BYTES: usize = 64 * 1024 * 1024;
/// Headers that belong to one hop, never relayed.
const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The running front; dropping it stops accepting.
pub(crate) struct DripFront {
    pub(crate) addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for DripFront {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl DripFront {
    /// Serve `listener`, relaying to the server at `upstream`.
    pub(crate) fn start(
        listener: std::net::TcpListener,
        upstream: SocketAddr,
        interval: Duration,
    ) -> std::io::Result<DripFront> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(std::io::Error::other)?;
        let accept = tokio::spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((s, _)) => s,
                    Err(_) => {
                        // EMFILE and the like: back off instead of spinning.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let http = http.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let http = http.clone();
                        async move { Ok::<_, Infallible>(relay(&http, upstream, interval, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Ok(DripFront { addr, accept })
    }
}

async fn relay(
    http: &reqwest::Client,
    upstream: SocketAddr,
    interval: Duration,
    req: Request<Incoming>,
) -> Response<DripBody> {
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, REQUEST_MAX_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => return plain(502, format!("replay drip front: request body: {e}")),
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut fwd = http.request(parts.method, format!("http://{upstream}{path}"));
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            fwd = fwd.header(name, value);
        }
    }
    let resp = match fwd.body(body).send().await {
        Ok(r) => r,
        Err(e) => return plain(502, format!("replay drip front: upstream: {e}")),
    };
    let dripping = resp
        .headers()
        .get(HEADER_FAULT)
        .is_some_and(|v| v.as_bytes() == FaultKind::Drip.as_str().as_bytes());
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = match resp.bytes().await {
        Ok(b) => b,
        Err(e) => return plain(502, format!("replay drip front: upstream body: {e}")),
    };
    let mut out = Response::new(DripBody::new(
        bytes,
        if dripping { Some(interval) } else { None },
    ));
    *out.status_mut() = status;
    for (name, value) in &headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

fn plain(status: u16, text: String) -> Response<DripBody> {
    let mut r = Response::new(DripBody::new(Bytes::from(text), None));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_GATEWAY);
    r
}

/// A body sent whole, or `DRIP_CHUNK_BYTES` at a time with a pause between.
pub(crate) struct DripBody {
    data: Bytes,
    interval: Option<Duration>,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl DripBody {
    fn new(data: Bytes, interval: Option<Duration>) -> DripBody {
        DripBody {
            data,
            interval,
            pause: None,
        }
    }
}

impl Body for DripBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.data.is_empty() {
            return Poll::Ready(None);
        }
        let Some(interval) = self.interval else {
            let all = std::mem::take(&mut self.data);
            return Poll::Ready(Some(Ok(Frame::data(all))));
        };
        if let Some(p) = self.pause.as_mut() {
            if p.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let n = DRIP_CHUNK_BYTES.min(self.data.len());
        let chunk = self.data.split_to(n);
        self.pause = Some(Box::pin(tokio::time::sleep(interval)));
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }
}
