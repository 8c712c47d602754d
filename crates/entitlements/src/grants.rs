//! Grants: allow or deny one payload (a model, an MCP server, a skill bundle) to a user, a
//! tenant or a group, with a priority.
//!
//! Precedence (the reference's, §2.3), over every grant that reaches the user: the higher
//! `priority` wins; at equal priority a deny beats an allow; then the newer grant wins. A grant
//! reaches a user through their tenant name, their subject, or any group that has them as a
//! member. A grant on payload `*` covers every payload of its type. When no grant applies, the
//! silo's default access for that payload type decides.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Allow or deny.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// May use it.
    Allow,
    /// May not use it.
    Deny,
}

impl Access {
    /// `allow` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }

    /// Parses `allow` / `deny`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// Whom a grant is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "lowercase")]
pub enum Recipient {
    /// A user's tenant, by name.
    Tenant(String),
    /// A person, by their identity-provider subject.
    User(String),
    /// Every member of a group, by group id.
    Group(String),
}

/// One grant, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// Grant id.
    pub id: String,
    /// `model`, `mcp-server`, `skill-bundle`.
    pub payload_type: String,
    /// The payload's name, or `*` for all of this type.
    pub payload_id: String,
    /// Whom it is for.
    pub recipient: Recipient,
    /// Allow or deny.
    pub access: Access,
    /// Higher wins.
    pub priority: i32,
    /// Newer wins at equal priority and access.
    pub created_at: DateTime<Utc>,
}

/// A group the user is a member of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// Group id.
    pub id: String,
    /// Group name (for explanations).
    pub name: String,
}

/// The user a decision is about: their tenant, their subject and their groups.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Tenant name.
    pub tenant: String,
    /// Identity-provider subject.
    pub subject: String,
    /// Groups with the user as a member.
    pub groups: Vec<Membership>,
}

/// How a grant reached the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Path {
    /// Granted to their tenant.
    Tenant,
    /// Granted to them as a person.
    User,
    /// Granted to a group they are in.
    Group {
        /// The group's name.
        name: String,
    },
}

/// A grant that applies to a user for a payload, with how it got there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applicable {
    /// The grant.
    pub grant: Grant,
    /// How it reached the user.
    pub path: Path,
}

/// Why a decision came out as it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Reason {
    /// The winning grant.
    Grant(Applicable),
    /// No grant applies: the silo's default for this payload type.
    Default,
}

/// A decision with its explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The outcome.
    pub access: Access,
    /// Why.
    pub reason: Reason,
    /// Grants that also applied but lost, in precedence order.
    pub overridden: Vec<Applicable>,
}

impl Decision {
    /// Whether the user may use the payload.
    pub fn allowed(&self) -> bool {
        self.access == Access::Allow
    }

    /// One sentence for people: "allowed by grant … to group “eng” (priority 10)".
    pub fn explain(&self) -> String {
        let verb = match self.access {
            Access::Allow => "Allowed",
            Access::Deny => "Denied",
        };
        match &self.reason {
            Reason::Default => format!("{verb} by the silo's default (no grant applies)"),
            Reason::Grant(a) => {
                let to = match &a.path {
                    Path::Tenant => "to this user's tenant".to_owned(),
                    Path::User => "to this person".to_owned(),
                    Path::Group { name } => format!("to group “{name}”"),
                };
                let on = if a.grant.payload_id == "*" { "on all" } else { "on this" };
                format!("{verb} by a grant {on} {} {to} (priority {})", a.grant.payload_type, a.grant.priority)
            }
        }
    }
}

/// How `grant` reaches `subject`, if it does at all (whatever its payload).
pub fn path_to(subject: &Subject, grant: &Grant) -> Option<Path> {
    match &grant.recipient {
        Recipient::Tenant(t) if *t == subject.tenant => Some(Path::Tenant),
        Recipient::User(s) if *s == subject.subject => Some(Path::User),
        Recipient::Group(id) => {
            subject.groups.iter().find(|g| g.id == *id).map(|g| Path::Group { name: g.name.clone() })
        }
        _ => None,
    }
}

/// Every grant on `payload_type`/`payload_id` that reaches `subject`, winner first.
pub fn applicable(subject: &Subject, grants: &[Grant], payload_type: &str, payload_id: &str) -> Vec<Applicable> {
    let mut found: Vec<Applicable> = grants
        .iter()
        .filter(|g| g.payload_type == payload_type && (g.payload_id == payload_id || g.payload_id == "*"))
        .filter_map(|g| path_to(subject, g).map(|path| Applicable { grant: g.clone(), path }))
        .collect();
    found.sort_by(|a, b| precedence(&a.grant, &b.grant));
    found
}

/// The total order of grants: higher priority, then deny before allow, then newer, then id (so
/// that two grants made in the same instant still decide the same way every time).
pub fn precedence(a: &Grant, b: &Grant) -> std::cmp::Ordering {
    let deny_first = |g: &Grant| u8::from(g.access == Access::Allow);
    b.priority
        .cmp(&a.priority)
        .then(deny_first(a).cmp(&deny_first(b)))
        .then(b.created_at.cmp(&a.created_at))
        .then(a.id.cmp(&b.id))
}

/// Decides whether `subject` may use `payload_type`/`payload_id`.
pub fn decide(subject: &Subject, grants: &[Grant], payload_type: &str, payload_id: &str, default: Access) -> Decision {
    let mut found = applicable(subject, grants, payload_type, payload_id).into_iter();
    match found.next() {
        Some(winner) => {
            Decision { access: winner.grant.access, reason: Reason::Grant(winner), overridden: found.collect() }
        }
        None => Decision { access: default, reason: Reason::Default, overridden: Vec::new() },
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, minute, 0).single().unwrap_or_default()
    }

    fn grant(id: &str, to: Recipient, access: Access, priority: i32, minute: u32) -> Grant {
        Grant {
            id: id.into(),
            payload_type: "model".into(),
            payload_id: "gpt".into(),
            recipient: to,
            access,
            priority,
            created_at: at(minute),
        }
    }

    fn ana() -> Subject {
        Subject {
            tenant: "ana".into(),
            subject: "sub-ana".into(),
            groups: vec![Membership { id: "g-eng".into(), name: "eng".into() }],
        }
    }

    fn winner(d: &Decision) -> &str {
        match &d.reason {
            Reason::Grant(a) => &a.grant.id,
            Reason::Default => "default",
        }
    }

    /// The precedence table: each row is (grants, expected winner, expected access).
    #[test]
    fn precedence_table() {
        use Access::{Allow, Deny};
        let t = || Recipient::Tenant("ana".into());
        let u = || Recipient::User("sub-ana".into());
        let g = || Recipient::Group("g-eng".into());
        let rows: Vec<(Vec<Grant>, &str, Access)> = vec![
            (vec![], "default", Allow),
            (vec![grant("a", t(), Allow, 0, 0)], "a", Allow),
            // Higher priority wins whatever the access.
            (vec![grant("a", t(), Allow, 10, 0), grant("d", g(), Deny, 5, 9)], "a", Allow),
            (vec![grant("a", g(), Allow, 1, 9), grant("d", u(), Deny, 2, 0)], "d", Deny),
            // Equal priority: deny beats allow, whatever the age.
            (vec![grant("a", t(), Allow, 0, 9), grant("d", g(), Deny, 0, 0)], "d", Deny),
            // Equal priority and access: newer wins.
            (vec![grant("old", t(), Deny, 0, 1), grant("new", u(), Deny, 0, 2)], "new", Deny),
            // A user-level deny overrides a tenant-level allow (the reference's example).
            (vec![grant("a", t(), Allow, 0, 5), grant("d", u(), Deny, 0, 1)], "d", Deny),
        ];
        for (i, (grants, expected, access)) in rows.into_iter().enumerate() {
            let d = decide(&ana(), &grants, "model", "gpt", Allow);
            assert_eq!((winner(&d), d.access), (expected, access), "row {i}");
        }
    }

    #[test]
    fn grants_reach_users_only_through_their_tenant_subject_or_groups() {
        let others = vec![
            grant("other-tenant", Recipient::Tenant("bob".into()), Access::Deny, 99, 0),
            grant("other-user", Recipient::User("sub-bob".into()), Access::Deny, 99, 0),
            grant("other-group", Recipient::Group("g-sales".into()), Access::Deny, 99, 0),
        ];
        let d = decide(&ana(), &others, "model", "gpt", Access::Allow);
        assert_eq!(d.reason, Reason::Default);
        assert!(d.allowed());
        // Leaving the group removes the group's grant.
        let via_group = vec![grant("g", Recipient::Group("g-eng".into()), Access::Deny, 0, 0)];
        assert!(!decide(&ana(), &via_group, "model", "gpt", Access::Allow).allowed());
        let outside = Subject { groups: vec![], ..ana() };
        assert!(decide(&outside, &via_group, "model", "gpt", Access::Allow).allowed());
    }

    #[test]
    fn wildcards_cover_a_type_and_other_payloads_do_not_apply() {
        let mut all = grant("all", Recipient::Tenant("ana".into()), Access::Deny, 0, 0);
        all.payload_id = "*".into();
        let mut other = grant("other", Recipient::Tenant("ana".into()), Access::Allow, 50, 0);
        other.payload_id = "claude".into();
        let mut skill = grant("skill", Recipient::Tenant("ana".into()), Access::Allow, 50, 0);
        skill.payload_type = "skill-bundle".into();
        let d = decide(&ana(), &[all, other, skill], "model", "gpt", Access::Allow);
        assert_eq!(winner(&d), "all");
        assert!(d.overridden.is_empty());
        assert!(d.explain().contains("all model"), "{}", d.explain());
    }

    #[test]
    fn the_default_decides_when_nothing_applies_and_the_explanation_names_the_group() {
        assert!(!decide(&ana(), &[], "model", "gpt", Access::Deny).allowed());
        let d = decide(
            &ana(),
            &[grant("g", Recipient::Group("g-eng".into()), Access::Allow, 3, 0)],
            "model",
            "gpt",
            Access::Deny,
        );
        assert_eq!(d.explain(), "Allowed by a grant on this model to group “eng” (priority 3)");
    }
}
