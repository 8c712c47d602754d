//! The HTTP stack of both roles: the Leptos pages and server functions, the REST API, health
//! endpoints, and the layers around them (request ids, tracing, authentication, role isolation,
//! body limits, headers).

pub mod assets;
pub mod auth;
pub mod compression;
pub mod csrf;
pub mod error;
pub mod forms;
pub mod guard;
pub mod health;
pub mod internal;
pub mod ratelimit;
pub mod rest;

use std::{net::SocketAddr, time::Duration};

use app::{Role, shell, state::AppState};
use axum::{Extension, Router, http::HeaderValue, middleware, routing::get};
use http::{HeaderName, Request, header};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use tower::ServiceBuilder;
use tower_http::{
    limit::RequestBodyLimitLayer,
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    set_header::SetResponseHeaderLayer,
    trace::TraceLayer,
};
use tower_sessions::{Expiry, SessionManagerLayer, cookie::SameSite};
use tracing::Level;

pub use self::auth::AuthConfig;

/// Largest request body accepted (admin forms and JSON bodies are far smaller).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Builds the complete router of the role in `state`.
pub fn router(state: AppState, auth: AuthConfig) -> Router {
    let role = state.role();
    let ui = state.ui_context();
    let routes = {
        let ui = ui.clone();
        generate_route_list(move || match role {
            Role::Fleet => view! { <app::FleetApp ui=ui.clone() /> }.into_any(),
            Role::Silo => view! { <app::SiloApp ui=ui.clone() /> }.into_any(),
        })
    };
    let bundle = app::bundle::Bundle::read(
        &std::path::Path::new(&*state.leptos_options.site_root).join(&*state.leptos_options.site_pkg_dir),
        role,
    );
    let app_shell = {
        let options = state.leptos_options.clone();
        let (ui, bundle) = (ui.clone(), bundle.clone());
        move || shell(options.clone(), ui.clone(), bundle.clone())
    };
    let fallback_shell = move |options: LeptosOptions| shell(options, ui.clone(), bundle.clone());
    let sessions = SessionManagerLayer::new(auth::store::PgSessionStore::new(state.pool.clone()))
        .with_name(auth.cookie_name())
        .with_secure(auth.0.secure)
        .with_http_only(true)
        .with_same_site(SameSite::Strict)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(
            tower_sessions::cookie::time::Duration::try_from(auth.0.session_idle)
                .unwrap_or(tower_sessions::cookie::time::Duration::minutes(30)),
        ));
    let https = auth.0.secure;

    let request_id = HeaderName::from_static(app::state::REQUEST_ID_HEADER);
    let layers = ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<_>| {
                    let id =
                        req.headers().get(app::state::REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("-");
                    let path = req.uri().path();
                    // Probes arrive every few seconds: their requests are logged at DEBUG only.
                    let span = if matches!(path, "/healthz" | "/readyz") {
                        tracing::debug_span!("probe", method = %req.method(), path = %path, request_id = %id)
                    } else {
                        // `route` and the trace span's name are filled in from the response
                        // ([`crate::metrics::name_request_span`]).
                        tracing::info_span!(
                            "request",
                            method = %req.method(),
                            path = %path,
                            request_id = %id,
                            route = tracing::field::Empty,
                            otel.kind = "server",
                        )
                    };
                    crate::telemetry::set_remote_parent(&span, req.headers());
                    span
                })
                .on_response(|res: &axum::http::Response<_>, latency: std::time::Duration, span: &tracing::Span| {
                    crate::metrics::name_request_span(span, res);
                    let quiet = span.metadata().is_none_or(|m| *m.level() > Level::INFO);
                    let (status, latency) = (res.status().as_u16(), format!("{} ms", latency.as_millis()));
                    if quiet {
                        tracing::debug!(%latency, status, "finished processing request");
                    } else {
                        tracing::info!(%latency, status, "finished processing request");
                    }
                }),
        )
        .layer(PropagateRequestIdLayer::new(request_id))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(header::REFERRER_POLICY, HeaderValue::from_static("same-origin")))
        .layer(SetResponseHeaderLayer::if_not_present(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        ))
        // HTML pages set their own policy with a per-response nonce (see `app::shell`).
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; base-uri 'none'"),
        ))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(sessions);

    let routed = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .nest("/api/v1", rest::router(&state))
        // The internal API has its own listener ([`internal_router`]); here it does not exist.
        .nest("/api/internal", Router::new().fallback(error::api_not_found))
        .nest_service(&format!("/{}", state.leptos_options.site_pkg_dir), assets::bundle(&state.leptos_options))
        .leptos_routes_with_context(&state, routes, leptos::nonce::provide_nonce, app_shell)
        .fallback(leptos_axum::file_and_error_handler_with_context::<AppState, _>(
            leptos::nonce::provide_nonce,
            fallback_shell,
        ))
        .layer(middleware::from_fn_with_state(role, guard::role_isolation))
        .layer(middleware::from_fn(crate::metrics::label_route))
        .with_state(state.clone());

    // The layers below wrap the routed app as one service, so they see every request before
    // routing: a form posted to a page (which has only GET routes) reaches the form layer.
    let pool = state.pool.clone();
    Router::new()
        .fallback_service(routed)
        .layer(middleware::from_fn_with_state(state, forms::handle))
        // Outside the form layer, so a form's answer is seen with its `no-store`.
        .layer(middleware::from_fn(compression::note_who_started))
        .layer(compression::layer())
        .layer(middleware::from_fn(move |req, next| csrf::protect(https, req, next)))
        .layer(middleware::from_fn_with_state((auth.clone(), pool), auth::authenticate))
        .layer(Extension(auth))
        .layer(layers)
        .layer(middleware::from_fn(move |req, next| crate::metrics::track(role, req, next)))
}

/// The fleet's internal API, served on its own port (`--internal-port`) and never through the
/// public listener or the Ingress: bearer credentials only (each silo's own, or an operator
/// token), no sessions, no pages. A silo has none (everything answers 404).
pub fn internal_router(state: AppState, auth: AuthConfig) -> Router {
    let routes = match state.role() {
        Role::Fleet => internal::router(),
        Role::Silo => Router::new().fallback(error::api_not_found),
    };
    let pool = state.pool.clone();
    let request_id = HeaderName::from_static(app::state::REQUEST_ID_HEADER);
    Router::new()
        .route("/healthz", get(health::healthz))
        .nest("/api/internal", routes)
        .fallback(error::api_not_found)
        .layer(middleware::from_fn(crate::metrics::label_route))
        .with_state(state)
        .layer(middleware::from_fn_with_state((auth.clone(), pool), auth::authenticate))
        .layer(Extension(auth))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
                .layer(TraceLayer::new_for_http().on_response(
                    |res: &axum::http::Response<_>, latency: std::time::Duration, span: &tracing::Span| {
                        crate::metrics::name_request_span(span, res);
                        tracing::info!(latency = %format!("{} ms", latency.as_millis()), status = res.status().as_u16(), "finished processing request");
                    },
                ).make_span_with(|req: &Request<_>| {
                    let span = tracing::info_span!(
                        "internal",
                        method = %req.method(),
                        path = %req.uri().path(),
                        route = tracing::field::Empty,
                        otel.kind = "server",
                    );
                    crate::telemetry::set_remote_parent(&span, req.headers());
                    span
                }))
                .layer(PropagateRequestIdLayer::new(request_id))
                .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES)),
        )
        .layer(middleware::from_fn(|req, next| crate::metrics::track(Role::Fleet, req, next)))
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains in-flight requests for
/// at most [`DRAIN_TIMEOUT`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_draining(listener, router, shutdown, DRAIN_TIMEOUT).await
}

/// [`serve`] with a drain of `drain`: once `shutdown` resolves no connection is accepted, the
/// requests under way may finish within `drain`, and then it returns whatever is still open
/// (left to the process's exit), so that stopping never waits on a stuck request.
pub async fn serve_draining(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    drain: Duration,
) -> std::io::Result<()> {
    let (signalled, draining) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        shutdown.await;
        let _ = signalled.send(());
    };
    let server = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .into_future();
    tokio::pin!(server);
    tokio::select! {
        served = &mut server => return served,
        _ = draining => {}
    }
    if let Ok(served) = tokio::time::timeout(drain, server).await {
        return served;
    }
    tracing::warn!(
        drain_s = drain.as_secs_f32(),
        "stopping: requests still under way after the drain are left to the exit"
    );
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}

/// How long in-flight requests may take after a shutdown signal.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

#[cfg(test)]
mod tests {
    use std::{
        io::{Read as _, Write as _},
        sync::{
            Arc,
            atomic::{AtomicUsize, Ordering},
        },
    };

    use super::*;

    /// Stopping, the server lets a request under way finish, and one stuck past the drain does
    /// not keep it from returning (before, the drain had no bound: a stuck request held the
    /// fleet's shutdown until Kubernetes killed it).
    #[tokio::test]
    async fn a_drain_lets_requests_under_way_finish_and_cuts_off_a_stuck_one() {
        let started = Arc::new(AtomicUsize::new(0));
        let (quick_started, stuck_started) = (started.clone(), started.clone());
        let router = Router::new()
            .route(
                "/quick",
                get(move || async move {
                    quick_started.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    "done"
                }),
            )
            .route(
                "/stuck",
                get(move || async move {
                    stuck_started.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<&'static str>().await
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let served = tokio::spawn(serve_draining(listener, router, shutdown, Duration::from_millis(600)));
        let ask = move |path: &'static str| {
            tokio::task::spawn_blocking(move || {
                let mut stream = std::net::TcpStream::connect(addr).unwrap();
                stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                write!(stream, "GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n").unwrap();
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                answer
            })
        };
        let (quick, _stuck) = (ask("/quick"), ask("/stuck"));
        while started.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.send(()).unwrap();
        let quick = quick.await.unwrap();
        assert!(quick.starts_with("HTTP/1.1 200") && quick.ends_with("done"), "{quick}");
        tokio::time::timeout(Duration::from_secs(10), served)
            .await
            .expect("serving returned once the drain was over")
            .unwrap()
            .unwrap();
    }
}
