//! The portal's two tools: the test-route tool (which deployment would serve a user asking for a
//! model, and why) and the domain check (may a user's assistant reach a host). Each is a `GET`
//! form its page answers, server-rendered: they need no wasm, and an answer has a link.

use leptos::prelude::*;

use crate::{
    components::form::Field,
    error::AppError,
    model::silo::{DomainCheck, RouteTest, RouteTestRequest},
};

/// The test-route tool: a `GET` form, so the page itself answers (with or without the wasm, and
/// a route can be linked to); `answer` is the page's run of it (`?route-user=&route-model=`).
#[component]
pub fn TestRouteTool(
    /// Users to pick from.
    users: Vec<String>,
    /// Public model names to pick from.
    models: Vec<String>,
    /// What was asked, and the answer, when the page was asked.
    answer: Option<(RouteTestRequest, Result<RouteTest, AppError>)>,
) -> impl IntoView {
    let (asked, answer) = answer.map_or((RouteTestRequest::default(), None), |(asked, answer)| (asked, Some(answer)));
    let user_error =
        answer.as_ref().and_then(|a| a.as_ref().err()).and_then(|e| e.field_errors().get("user").map(str::to_owned));
    let (error, result) = match answer {
        Some(Ok(route)) => (None, Some(route)),
        // Said once: under the user field when it is about the user.
        Some(Err(e)) => (user_error.is_none().then(|| e.to_string()), None),
        None => (None, None),
    };
    let picked_model = asked.model.unwrap_or_default();
    view! {
        <form class="form inline test-route" id="test-route" method="get" action="/models#test-route">
            <Field id="route-user" label="User" error=Signal::stored(user_error)>
                <select id="route-user" name="route-user">
                    {users.into_iter().map(|u| {
                        let (selected, label) = (u == asked.user, u.clone());
                        view! { <option value=u selected=selected>{label}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <Field id="route-model" label="Requested model" hint="Empty: the defaults decide." error=Signal::stored(None::<String>)>
                <select id="route-model" name="route-model">
                    <option value="">"(none — use the defaults)"</option>
                    {models.into_iter().map(|m| {
                        let (selected, label) = (m == picked_model, m.clone());
                        view! { <option value=m selected=selected>{label}</option> }
                    }).collect_view()}
                </select>
            </Field>
            <div class="form-actions"><button type="submit" class="btn primary">"Test route"</button></div>
        </form>
        {error.map(|e| view! { <p class="error" role="alert">{e}</p> })}
        {result.map(|r| view! { <RouteResult route=r /> })}
    }
}

/// A route, explained.
#[component]
pub fn RouteResult(route: RouteTest) -> impl IntoView {
    if route.no_default {
        return view! {
            <div class="route-result idle" role="status">
                <p>
                    "No default model is set for this user, their groups or the silo, so each request must name a model. "
                    <a href="/models#defaults">"Set a default on Models"</a>
                    "."
                </p>
            </div>
        }
        .into_any();
    }
    if !route.ok {
        return view! {
            <div class="route-result bad" role="status">
                <p><strong>"No route: "</strong>{route.error.unwrap_or_default()}</p>
                {(!route.skipped.is_empty()).then(|| view! { <ul>{route.skipped.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}</ul> })}
            </div>
        }
        .into_any();
    }
    let deployments = route.deployments.into_iter().map(|(upstream, pct)| view! { <li><span class="mono">{upstream}</span>{format!(" — {pct} % of requests")}</li> }).collect_view();
    view! {
        <div class="route-result ok" role="status">
            <p>
                "→ "<strong class="route-model">{route.model.unwrap_or_default()}</strong>
                {format!(", chosen by {}.", route.chosen_by.unwrap_or_default())}
            </p>
            <p class="muted">{route.access.unwrap_or_default()}</p>
            <p>"Deployments:"</p>
            <ul>{deployments}</ul>
            <p>{if route.fallbacks.is_empty() { "No fallback.".to_owned() } else { format!("Fallbacks, in order: {}", route.fallbacks.join(" → ")) }}</p>
            {(!route.skipped.is_empty()).then(|| view! { <p class="muted">"Passed over: "{route.skipped.join("; ")}</p> })}
        </div>
    }
    .into_any()
}

/// Checks a domain against a user's policy: a `GET` form the page answers
/// (`/access?user=&domain=`), with or without the wasm; `answer` is the page's run of it.
#[component]
pub fn DomainCheckTool(
    /// The user.
    user: String,
    /// The domain asked about, and the answer, when the page was asked.
    answer: Option<(String, Result<DomainCheck, AppError>)>,
) -> impl IntoView {
    let (domain, answer) = answer.map_or((String::new(), None), |(domain, answer)| (domain, Some(answer)));
    let (error, result) = match answer {
        Some(Ok(check)) => (None, Some(check)),
        Some(Err(e)) => (Some(e.field_errors().get("domain").map_or_else(|| e.to_string(), str::to_owned)), None),
        None => (None, None),
    };
    view! {
        <form class="form inline" id="check-domain-form" method="get" action="/access#check-domain-form">
            <input type="hidden" name="user" value=user />
            <Field id="check-domain" label="Can this user's assistant reach…" error=Signal::stored(error)>
                <input id="check-domain" name="domain" type="text" placeholder="api.example.com" value=domain />
            </Field>
            <div class="form-actions"><button type="submit" class="btn">"Check"</button></div>
        </form>
        {result.map(|r| view! {
            <p class=if r.allowed { "notice ok domain-result" } else { "notice warn domain-result" } role="status">{r.explanation}</p>
        })}
    }
}
