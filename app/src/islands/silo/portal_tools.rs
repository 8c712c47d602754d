//! The portal's two interactive tools: the test-route tool (which deployment would serve a user
//! asking for a model, and why) and the domain check (may a user's assistant reach a host).

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api::silo::{check_domain, test_route},
    components::form::Field,
    model::silo::{DomainCheck, RouteTest, RouteTestRequest},
};

/// The test-route tool.
#[cfg_attr(any(feature = "ssr", feature = "silo-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "silo-islands")), component)]
pub fn TestRouteTool(
    /// Users to pick from.
    users: Vec<String>,
    /// Public model names to pick from.
    models: Vec<String>,
) -> impl IntoView {
    let user = RwSignal::new(users.first().cloned().unwrap_or_default());
    let model = RwSignal::new(String::new());
    let result = RwSignal::new(None::<RouteTest>);
    let error = RwSignal::new(None::<String>);
    let user_error = RwSignal::new(None::<String>);
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        let request = RouteTestRequest {
            user: user.get_untracked(),
            model: Some(model.get_untracked()).filter(|m| !m.is_empty()),
        };
        spawn_local(async move {
            match test_route(request).await {
                Ok(r) => {
                    result.set(Some(r));
                    error.set(None);
                    user_error.set(None);
                }
                Err(e) => {
                    user_error.set(e.field_errors().get("user").map(str::to_owned));
                    error.set(Some(e.to_string()));
                    result.set(None);
                }
            }
        });
    };
    view! {
        <form class="form inline test-route" on:submit=submit>
            <Field id="route-user" label="User" error=Signal::derive(move || user_error.get())>
                <select id="route-user" on:change=move |ev| user.set(event_target_value(&ev))>
                    {users.into_iter().map(|u| view! { <option value=u.clone()>{u.clone()}</option> }).collect_view()}
                </select>
            </Field>
            <Field id="route-model" label="Requested model" hint="Empty: the defaults decide." error=Signal::derive(|| None::<String>)>
                <select id="route-model" on:change=move |ev| model.set(event_target_value(&ev))>
                    <option value="">"(none — use the defaults)"</option>
                    {models.into_iter().map(|m| view! { <option value=m.clone()>{m.clone()}</option> }).collect_view()}
                </select>
            </Field>
            <div class="form-actions"><button type="submit" class="btn primary">"Test route"</button></div>
        </form>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        {move || result.get().map(|r| view! { <RouteResult route=r /> })}
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

/// Checks a domain against a user's policy.
#[cfg_attr(any(feature = "ssr", feature = "silo-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "silo-islands")), component)]
pub fn DomainCheckTool(
    /// The user.
    user: String,
) -> impl IntoView {
    let domain = RwSignal::new(String::new());
    let result = RwSignal::new(None::<DomainCheck>);
    let error = RwSignal::new(None::<String>);
    let user = StoredValue::new(user);
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        let d = domain.get_untracked();
        spawn_local(async move {
            match check_domain(user.get_value(), d).await {
                Ok(r) => {
                    result.set(Some(r));
                    error.set(None);
                }
                Err(e) => {
                    error.set(Some(e.field_errors().get("domain").map_or_else(|| e.to_string(), str::to_owned)));
                    result.set(None);
                }
            }
        });
    };
    view! {
        <form class="form inline" on:submit=submit>
            <Field id="check-domain" label="Can this user's assistant reach…" error=Signal::derive(move || error.get())>
                <input id="check-domain" type="text" placeholder="api.example.com" prop:value=move || domain.get() on:input=move |ev| domain.set(event_target_value(&ev)) />
            </Field>
            <div class="form-actions"><button type="submit" class="btn">"Check"</button></div>
        </form>
        {move || result.get().map(|r| view! {
            <p class=if r.allowed { "notice ok domain-result" } else { "notice warn domain-result" } role="status">{r.explanation}</p>
        })}
    }
}
