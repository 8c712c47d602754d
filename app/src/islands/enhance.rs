//! Progressive enhancement of a server-rendered form: an island that draws nothing.
//!
//! The form is a plain component's markup, the same with and without the wasm (see
//! [`crate::forms`]): labels, controls, hints, an error slot under each field
//! (`<field id>-error`, the field's id from [`field_id`]) and a slot for the form's sentence
//! (`<form id>-alert`). With the wasm, [`EnhanceForm`] takes the form over where it stands,
//! without drawing it again (what was typed before the wasm woke stays where it was typed):
//!
//! - a submit is sent in the background through the form layer ([`super::post_form`]) and
//!   answered by the next page, or by the server's messages placed in those slots (a field's
//!   slot found by [`field_id`], else beside the control posted under the key's name); editing a
//!   field clears its message;
//! - a select marked `data-follows="<key>"` offers only its `<optgroup data-when>` for that
//!   field's value, and its field hides when no group matches;
//! - an input marked `data-expect="<text>"` (a typed confirmation) arms the submit button only
//!   once it holds that text;
//! - in the silo's bundle, a `data-preview` button shows whose access the form would change, and
//!   a `<details data-impact="<grant id>">` around the form shows what removing the grant would.
//!
//! [`CopyButton`] is the same kind of island for a secret's Copy button.
//!
//! Written against the DOM (web-sys) rather than as a reactive view on purpose: an island's
//! view code is compiled into its role's bundle for every element it draws (issue 20), and the
//! form's markup is already the server's. With the silo's forms and tools taken over this way its
//! bundle went from 269 to 100 KB gzip (issue 20's notes).

use leptos::prelude::*;

use crate::error::AppError;

/// The DOM id of the control for `key` in the form `form` (dots in a nested key become dashes);
/// its message slot is this id with `-error`.
pub fn field_id(form: &str, key: &str) -> String {
    format!("{form}-{}", key.replace('.', "-"))
}

/// The DOM id of the slot for the form's own sentence (what no field shows).
pub fn alert_id(form: &str) -> String {
    format!("{form}-alert")
}

/// The DOM id of the slot a preview of the form's effect is shown in.
pub fn impact_id(form: &str) -> String {
    format!("{form}-impact")
}

/// The sentence above a refused form: the error itself when no field carries it, the messages
/// of fields this form does not show (in words, without their JSON keys), or a pointer to the
/// fields below. A field's message is shown once, under the field.
pub(crate) fn summary(err: &AppError, shown: impl Fn(&str) -> bool) -> Option<String> {
    let fields = err.field_errors();
    if fields.is_empty() {
        return Some(err.to_string());
    }
    let unplaced: Vec<&str> = fields.0.iter().filter(|(k, _)| !shown(k)).map(|(_, m)| m.as_str()).collect();
    Some(match (unplaced.is_empty(), fields.0.len()) {
        (false, _) => unplaced.join(" "),
        (true, 1) => "One field needs attention; see below.".to_owned(),
        (true, n) => format!("{n} fields need attention; see below."),
    })
}

/// Takes over the server-rendered form with DOM id `form` (see the module's notes); renders
/// nothing. Placed inside the form, after its controls.
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands", feature = "silo-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands", feature = "silo-islands")), component)]
pub fn EnhanceForm(form: String) -> impl IntoView {
    #[cfg(feature = "hydrate")]
    live::take_over(&form);
    let _ = form;
}

/// Shows the server-rendered button `<input>-copy` (hidden without the wasm: the clipboard
/// needs it) and makes it copy the text of the input `input` (a secret shown once); renders
/// nothing.
#[cfg_attr(any(feature = "ssr", feature = "silo-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "silo-islands")), component)]
pub fn CopyButton(input: String) -> impl IntoView {
    #[cfg(feature = "silo-islands")]
    live::copy(&input);
    let _ = input;
}

/// The browser side: event listeners on the form's own elements (also what a form's own
/// checks, such as the customer form's, build on).
#[cfg(feature = "hydrate")]
pub(crate) mod live {
    use leptos::{
        prelude::document,
        task::spawn_local,
        wasm_bindgen::{JsCast, closure::Closure},
        web_sys::{Element, Event, HtmlInputElement, HtmlSelectElement},
    };

    use super::{alert_id, field_id, summary};
    use crate::error::AppError;

    pub(super) fn take_over(id: &str) {
        let Some(form) = document().get_element_by_id(id) else {
            leptos::logging::warn!("no form #{id} to enhance");
            return;
        };
        for select in all(&form, "select[data-follows]") {
            follow(id, select);
        }
        for input in all(&form, "input[data-expect]") {
            let form = form.clone();
            on(&input, "input", move |_| refresh(&form));
        }
        refresh(&form);
        on(&form, "input", |ev| {
            if let Some(control) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) {
                clear_field_of(&control);
            }
        });
        let (target, id) = (form.clone(), id.to_owned());
        on(&target, "submit", move |ev| {
            ev.prevent_default();
            submit(form.clone(), id.clone());
        });
        #[cfg(feature = "silo-islands")]
        silo::take_over(&target);
    }

    /// Calls `f` on each `event` at `target`, for the page's life.
    pub(crate) fn on(target: &Element, event: &str, f: impl FnMut(Event) + 'static) {
        let listener = Closure::<dyn FnMut(Event)>::new(f);
        let _ = target.add_event_listener_with_callback(event, listener.as_ref().unchecked_ref());
        listener.forget();
    }

    /// The elements under `root` that match `selector`, in document order.
    pub(crate) fn all(root: &Element, selector: &str) -> Vec<Element> {
        let Ok(list) = root.query_selector_all(selector) else { return Vec::new() };
        (0..list.length()).filter_map(|i| list.item(i)?.dyn_into().ok()).collect()
    }

    /// The current value of an input, select or textarea.
    fn value_of(el: &Element) -> String {
        if let Some(select) = el.dyn_ref::<HtmlSelectElement>() {
            select.value()
        } else if let Some(input) = el.dyn_ref::<HtmlInputElement>() {
            input.value()
        } else {
            el.text_content().unwrap_or_default()
        }
    }

    fn set_flag(el: &Element, name: &str, on: bool) {
        let _ = el.toggle_attribute_with_force(name, on);
    }

    /// The buttons' state: all wait while a post is under way; a submit button also waits for
    /// its typed confirmation.
    pub(crate) fn refresh(form: &Element) {
        let busy = form.has_attribute("aria-busy");
        let unconfirmed = all(form, "input[data-expect]")
            .iter()
            .any(|i| value_of(i).trim() != i.get_attribute("data-expect").unwrap_or_default());
        for button in all(form, "button") {
            let submits = button.get_attribute("type").as_deref() != Some("button");
            set_flag(&button, "disabled", busy || (submits && unconfirmed));
        }
    }

    pub(crate) fn set_busy(form: &Element, busy: bool) {
        set_flag(form, "aria-busy", busy);
        refresh(form);
    }

    fn submit(form: Element, id: String) {
        if form.has_attribute("aria-busy") {
            return;
        }
        let sent = crate::islands::post_form(&id);
        set_busy(&form, true);
        spawn_local(async move {
            match sent.await {
                Ok(href) => crate::islands::navigate(&href),
                Err(err) => {
                    show(&form, &id, &err);
                    set_busy(&form, false);
                }
            }
        });
    }

    /// Places the server's messages: each under its field where the form shows it, the rest
    /// (or the error itself) in the form's sentence.
    pub(super) fn show(form: &Element, id: &str, err: &AppError) {
        clear(form);
        let slot_of = |key: &str| slot_of(form, id, key);
        for (key, message) in &err.field_errors().0 {
            if let Some(slot) = slot_of(key) {
                mark_slot(&slot, Some(message));
            }
        }
        say(id, summary(err, |key| slot_of(key).is_some()).as_deref());
        focus_first_invalid(form);
    }

    /// Shows `message` under the control `id` (or clears it), marking its field and the control.
    #[cfg(feature = "fleet-islands")]
    pub(crate) fn mark(id: &str, message: Option<&str>) {
        if let Some(slot) = document().get_element_by_id(&format!("{id}-error")) {
            mark_slot(&slot, message);
        }
    }

    /// Writes `message` into a field's slot (`<control id>-error`), or clears it, and marks the
    /// field (`.invalid`) and its control (`aria-invalid`).
    fn mark_slot(slot: &Element, message: Option<&str>) {
        slot.set_text_content(message);
        if let Some(field) = slot.parent_element() {
            let _ = field.class_list().toggle_with_force("invalid", message.is_some());
        }
        let control = slot.id().strip_suffix("-error").and_then(|id| document().get_element_by_id(id));
        if let Some(control) = control {
            let _ = match message {
                Some(_) => control.set_attribute("aria-invalid", "true"),
                None => control.remove_attribute("aria-invalid"),
            };
        }
    }

    /// Moves the focus to the first control of the first field with a message.
    pub(crate) fn focus_first_invalid(form: &Element) {
        let control = form.query_selector(".field.invalid :is(input, select, textarea)").ok().flatten();
        if let Some(control) = control.and_then(|c| c.dyn_into::<leptos::web_sys::HtmlElement>().ok()) {
            let _ = control.focus();
        }
    }

    /// The message slot of the field `key`: by the portal's ids ([`field_id`]), else beside the
    /// control posted under that name.
    fn slot_of(form: &Element, id: &str, key: &str) -> Option<Element> {
        let by_id = |control: &str| document().get_element_by_id(&format!("{control}-error"));
        by_id(&field_id(id, key)).or_else(|| {
            let control = form.query_selector(&format!("[name=\"{key}\"]")).ok().flatten()?;
            by_id(&control.id())
        })
    }

    /// Empties the message of the field holding `control` (once it is edited, it may be right).
    fn clear_field_of(control: &Element) {
        let Some(field) = control.closest(".field").ok().flatten() else { return };
        for slot in all(&field, ":scope > p.error") {
            mark_slot(&slot, None);
        }
    }

    /// Empties every field's message slot.
    pub(super) fn clear(form: &Element) {
        for slot in all(form, ".field > p.error") {
            mark_slot(&slot, None);
        }
    }

    /// Writes (or clears) the form's sentence.
    pub(crate) fn say(id: &str, sentence: Option<&str>) {
        if let Some(slot) = document().get_element_by_id(&alert_id(id)) {
            slot.set_text_content(sentence);
            set_flag(&slot, "hidden", sentence.is_none());
        }
    }

    /// A select whose options depend on another field: only the group for that field's value is
    /// offered (the field hides when none is), and a change of group picks its first option
    /// unless the value is in it. Until the wasm runs every group shows, after an empty choice.
    fn follow(form: &str, select: Element) {
        let Some(leader) =
            select.get_attribute("data-follows").and_then(|key| document().get_element_by_id(&field_id(form, &key)))
        else {
            return;
        };
        let apply = {
            let leader = leader.clone();
            move || {
                let picked = value_of(&leader);
                let mut offered: Option<Vec<String>> = None;
                for group in all(&select, "optgroup") {
                    let on = group.get_attribute("data-when").as_deref() == Some(picked.as_str());
                    set_flag(&group, "hidden", !on);
                    set_flag(&group, "disabled", !on);
                    if on {
                        offered = Some(all(&group, "option").iter().filter_map(|o| o.get_attribute("value")).collect());
                    }
                }
                for none in all(&select, "option[value='']") {
                    set_flag(&none, "hidden", true);
                }
                if let Some(slot) = select.closest(".field-slot").ok().flatten() {
                    set_flag(&slot, "hidden", offered.is_none());
                }
                let options = offered.unwrap_or_default();
                if let Some(select) = select.dyn_ref::<HtmlSelectElement>()
                    && !options.contains(&select.value())
                {
                    select.set_value(options.first().map_or("", String::as_str));
                }
            }
        };
        apply();
        on(&leader, "change", move |_| apply());
    }

    /// See [`super::CopyButton`].
    #[cfg(feature = "silo-islands")]
    pub(super) fn copy(input: &str) {
        let doc = document();
        let (Some(button), Some(field)) =
            (doc.get_element_by_id(&format!("{input}-copy")), doc.get_element_by_id(input))
        else {
            return;
        };
        set_flag(&button, "hidden", false);
        let target = button.clone();
        on(&target, "click", move |_| {
            let _ = leptos::prelude::window().navigator().clipboard().write_text(&value_of(&field));
            button.set_text_content(Some("Copied"));
        });
    }

    /// The silo's previews: whose access a form, or a grant's removal, would change.
    #[cfg(feature = "silo-islands")]
    mod silo {
        use leptos::{prelude::document, task::spawn_local, web_sys::Element};

        use super::{all, clear, on, say, set_busy, set_flag, show};
        use crate::{api::silo as api, islands::enhance::impact_id, model::silo::WhatIf};

        pub(super) fn take_over(form: &Element) {
            let id = form.id();
            for button in all(form, "button[data-preview]") {
                set_flag(&button, "hidden", false);
                let (form, id) = (form.clone(), id.clone());
                on(&button, "click", move |_| {
                    let fields = crate::islands::form_fields(&id);
                    set_busy(&form, true);
                    let (form, id) = (form.clone(), id.clone());
                    spawn_local(async move {
                        match api::preview_portal_form(fields).await {
                            Ok(w) => {
                                clear(&form);
                                say(&id, None);
                                draw(&id, &w);
                            }
                            Err(err) => show(&form, &id, &err),
                        }
                        set_busy(&form, false);
                    });
                });
            }
            if let Some(details) = form.closest("details[data-impact]").ok().flatten() {
                let grant = details.get_attribute("data-impact").unwrap_or_default();
                let target = details.clone();
                on(&target, "toggle", move |_| {
                    if details.has_attribute("open") {
                        let (grant, id) = (grant.clone(), id.clone());
                        spawn_local(async move {
                            if let Ok(w) = api::preview_grant_removal(grant).await {
                                draw(&id, &w);
                            }
                        });
                    }
                });
            }
        }

        fn el(tag: &str, text: Option<&str>) -> Option<Element> {
            let el = document().create_element(tag).ok()?;
            el.set_text_content(text);
            Some(el)
        }

        /// Draws a what-if into the form's impact slot (the markup the portal has always shown).
        fn draw(id: &str, what_if: &WhatIf) -> Option<()> {
            let slot = document().get_element_by_id(&impact_id(id))?;
            slot.set_text_content(None);
            let add = |parent: &Element, child: &Element| parent.append_child(child).ok().map(drop);
            if what_if.changes.is_empty() {
                let sentence = format!("No change: {} decision(s) evaluated, none would flip.", what_if.evaluated);
                let p = el("p", Some(&sentence))?;
                p.set_class_name("notice info what-if");
                p.set_attribute("role", "status").ok()?;
                return add(&slot, &p);
            }
            let block = el("div", None)?;
            block.set_class_name("what-if");
            block.set_attribute("role", "status").ok()?;
            let count = what_if.changes.len();
            add(&block, &el("p", Some(&format!("{count} decision(s) of {} would change:", what_if.evaluated)))?)?;
            let (table, thead, head, body) =
                (el("table", None)?, el("thead", None)?, el("tr", None)?, el("tbody", None)?);
            table.set_class_name("table");
            for th in ["User", "Applies to", "Before", "After", "Why, after"] {
                add(&head, &el("th", Some(th))?)?;
            }
            let yes = |b: bool| if b { "yes" } else { "no" };
            for c in &what_if.changes {
                let row = el("tr", None)?;
                for cell in [c.tenant.as_str(), c.model.as_str(), yes(c.before), yes(c.after), c.why.as_str()] {
                    add(&row, &el("td", Some(cell))?)?;
                }
                add(&body, &row)?;
            }
            add(&thead, &head)?;
            add(&table, &thead)?;
            add(&table, &body)?;
            add(&block, &table)?;
            add(&slot, &block)
        }
    }
}
