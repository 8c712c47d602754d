//! The effective model of a request and the deployments that would serve it.
//!
//! Resolution order (first match wins; the reference's §7.4 with the portal's scopes): the model
//! the request names; the user's default; the defaults of the user's groups (in the order given,
//! which the caller sorts by group name); the silo's default. A model the request names must be
//! defined and allowed — it never silently routes elsewhere. A default that is undefined or not
//! allowed for the user is skipped, and the skip is reported. A public name may have several
//! deployments (weighted load balancing) and a fallback chain of other public names; fallbacks the
//! user may not use are left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::grants::{Access, Decision, Grant, Membership, Subject, decide};

/// The payload type of model grants.
pub const MODEL: &str = "model";

/// One upstream deployment behind a public model name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deployment {
    /// Model definition id.
    pub id: String,
    /// The name users ask for.
    pub public_name: String,
    /// The provider's model, e.g. `openai/gpt-4o-mini`.
    pub upstream_model: String,
    /// Relative share of the traffic among the deployments of its public name.
    pub weight: u32,
}

/// The defaults that may pick a model when a request names none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Defaults {
    /// The user's own default.
    pub user: Option<String>,
    /// Defaults of the user's groups, in resolution order.
    pub groups: Vec<(Membership, String)>,
    /// The silo's default.
    pub silo: Option<String>,
}

/// What picked the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ChosenBy {
    /// The request named it.
    Request,
    /// The user's default.
    UserDefault,
    /// A group's default.
    GroupDefault {
        /// The group's name.
        group: String,
    },
    /// The silo's default.
    SiloDefault,
}

impl ChosenBy {
    /// For people.
    pub fn describe(&self) -> String {
        match self {
            Self::Request => "the request named it".into(),
            Self::UserDefault => "the user's default model".into(),
            Self::GroupDefault { group } => format!("the default of group “{group}”"),
            Self::SiloDefault => "the silo's default model".into(),
        }
    }
}

/// A deployment with its share of the traffic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    /// The deployment.
    pub deployment: Deployment,
    /// Percent of requests, rounded down (weights 1:1:1 → 33 each).
    pub percent: u32,
}

/// A resolved route.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The public model name that serves the request.
    pub model: String,
    /// What picked it.
    pub chosen_by: ChosenBy,
    /// Why the user may use it.
    pub access: Decision,
    /// Its deployments and their shares.
    pub deployments: Vec<Share>,
    /// The fallback chain the user may use, in order.
    pub fallbacks: Vec<String>,
    /// Candidates passed over, with why (for people).
    pub skipped: Vec<String>,
}

/// Why no route exists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum RouteError {
    /// The requested model is not defined in this silo.
    Unknown {
        /// The name asked for.
        model: String,
    },
    /// The requested model is defined, but this user may not use it.
    NotAllowed {
        /// The name asked for.
        model: String,
        /// The deciding grant.
        access: Box<Decision>,
    },
    /// Nothing was requested and no default is usable.
    NoModel {
        /// Defaults passed over, with why.
        skipped: Vec<String>,
    },
}

impl RouteError {
    /// For people.
    pub fn describe(&self) -> String {
        match self {
            Self::Unknown { model } => format!("No model named “{model}” is defined in this silo."),
            Self::NotAllowed { model, access } => {
                format!("“{model}” is not available to this user: {}.", access.explain())
            }
            Self::NoModel { skipped } if skipped.is_empty() => {
                "No model was requested and no default is set (silo, group or user).".into()
            }
            Self::NoModel { skipped } => {
                format!("No model was requested and no default is usable: {}.", skipped.join("; "))
            }
        }
    }
}

/// Everything the resolver needs about the silo's models.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// Every deployment.
    pub deployments: Vec<Deployment>,
    /// Public name → fallback public names, in order.
    pub fallbacks: BTreeMap<String, Vec<String>>,
    /// Grants (all types; only model grants matter here).
    pub grants: Vec<Grant>,
    /// Access when no grant applies.
    pub default_access: Access,
}

impl Catalog {
    /// The distinct public names, sorted.
    pub fn public_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.deployments.iter().map(|d| d.public_name.clone()).collect();
        names.sort();
        names.dedup();
        names
    }

    fn defined(&self, name: &str) -> bool {
        self.deployments.iter().any(|d| d.public_name == name)
    }

    /// Whether `subject` may use model `name`, and why.
    pub fn access(&self, subject: &Subject, name: &str) -> Decision {
        decide(subject, &self.grants, MODEL, name, self.default_access)
    }

    fn shares(&self, name: &str) -> Vec<Share> {
        let deployments: Vec<&Deployment> = self.deployments.iter().filter(|d| d.public_name == name).collect();
        let total: u64 = deployments.iter().map(|d| u64::from(d.weight)).sum();
        deployments
            .into_iter()
            .map(|d| Share {
                deployment: d.clone(),
                percent: (u64::from(d.weight) * 100).checked_div(total).map_or(0, |p| u32::try_from(p).unwrap_or(100)),
            })
            .collect()
    }
}

/// Resolves the model for `subject` asking for `requested` (or nothing).
pub fn resolve(
    subject: &Subject,
    requested: Option<&str>,
    defaults: &Defaults,
    catalog: &Catalog,
) -> Result<Route, RouteError> {
    let mut skipped = Vec::new();
    let (model, chosen_by, access) = match requested.map(str::trim).filter(|r| !r.is_empty()) {
        Some(name) => {
            if !catalog.defined(name) {
                return Err(RouteError::Unknown { model: name.to_owned() });
            }
            let access = catalog.access(subject, name);
            if !access.allowed() {
                return Err(RouteError::NotAllowed { model: name.to_owned(), access: Box::new(access) });
            }
            (name.to_owned(), ChosenBy::Request, access)
        }
        None => {
            let candidates = defaults
                .user
                .iter()
                .map(|m| (m.clone(), ChosenBy::UserDefault))
                .chain(
                    defaults.groups.iter().map(|(g, m)| (m.clone(), ChosenBy::GroupDefault { group: g.name.clone() })),
                )
                .chain(defaults.silo.iter().map(|m| (m.clone(), ChosenBy::SiloDefault)));
            let mut found = None;
            for (name, by) in candidates {
                if !catalog.defined(&name) {
                    skipped.push(format!("“{name}” ({}) is not defined", by.describe()));
                    continue;
                }
                let access = catalog.access(subject, &name);
                if !access.allowed() {
                    skipped.push(format!("“{name}” ({}) is not allowed for this user", by.describe()));
                    continue;
                }
                found = Some((name, by, access));
                break;
            }
            found.ok_or(RouteError::NoModel { skipped: skipped.clone() })?
        }
    };
    let mut fallbacks = Vec::new();
    for next in catalog.fallbacks.get(&model).into_iter().flatten() {
        if !catalog.defined(next) {
            skipped.push(format!("fallback “{next}” is not defined"));
        } else if !catalog.access(subject, next).allowed() {
            skipped.push(format!("fallback “{next}” is not allowed for this user"));
        } else {
            fallbacks.push(next.clone());
        }
    }
    Ok(Route { deployments: catalog.shares(&model), model, chosen_by, access, fallbacks, skipped })
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::grants::Recipient;

    fn deployment(id: &str, name: &str, weight: u32) -> Deployment {
        Deployment { id: id.into(), public_name: name.into(), upstream_model: format!("openai/{id}"), weight }
    }

    fn deny(model: &str) -> Grant {
        Grant {
            id: format!("deny-{model}"),
            payload_type: MODEL.into(),
            payload_id: model.into(),
            recipient: Recipient::Tenant("ana".into()),
            access: Access::Deny,
            priority: 0,
            created_at: Utc::now(),
        }
    }

    fn catalog() -> Catalog {
        Catalog {
            deployments: vec![
                deployment("a1", "fast", 3),
                deployment("a2", "fast", 1),
                deployment("b", "smart", 1),
                deployment("c", "secret", 1),
            ],
            fallbacks: BTreeMap::from([("smart".into(), vec!["secret".into(), "fast".into(), "gone".into()])]),
            grants: vec![deny("secret")],
            default_access: Access::Allow,
        }
    }

    fn ana() -> Subject {
        Subject {
            tenant: "ana".into(),
            subject: "s".into(),
            groups: vec![Membership { id: "g".into(), name: "eng".into() }],
        }
    }

    #[test]
    fn a_request_wins_and_shares_follow_the_weights() {
        let r =
            resolve(&ana(), Some("fast"), &Defaults { silo: Some("smart".into()), ..Defaults::default() }, &catalog())
                .unwrap();
        assert_eq!((r.model.as_str(), &r.chosen_by), ("fast", &ChosenBy::Request));
        let shares: Vec<_> = r.deployments.iter().map(|s| (s.deployment.id.as_str(), s.percent)).collect();
        assert_eq!(shares, [("a1", 75), ("a2", 25)]);
    }

    #[test]
    fn requests_for_unknown_or_denied_models_fail_with_the_reason() {
        assert_eq!(
            resolve(&ana(), Some("nope"), &Defaults::default(), &catalog()),
            Err(RouteError::Unknown { model: "nope".into() })
        );
        let err = resolve(&ana(), Some("secret"), &Defaults::default(), &catalog()).unwrap_err();
        assert!(matches!(&err, RouteError::NotAllowed { model, .. } if model == "secret"));
        assert!(err.describe().contains("Denied by a grant"), "{}", err.describe());
    }

    #[test]
    fn defaults_resolve_user_then_group_then_silo_skipping_unusable_ones() {
        let defaults = Defaults {
            user: Some("secret".into()),
            groups: vec![(Membership { id: "g".into(), name: "eng".into() }, "gone".into())],
            silo: Some("smart".into()),
        };
        let r = resolve(&ana(), None, &defaults, &catalog()).unwrap();
        assert_eq!((r.model.as_str(), &r.chosen_by), ("smart", &ChosenBy::SiloDefault));
        assert_eq!(r.skipped.len(), 4, "{:?}", r.skipped);
        assert_eq!(r.fallbacks, ["fast"], "denied and undefined fallbacks are left out");
        let group_first = Defaults {
            user: None,
            groups: vec![(Membership { id: "g".into(), name: "eng".into() }, "fast".into())],
            silo: Some("smart".into()),
        };
        assert_eq!(
            resolve(&ana(), None, &group_first, &catalog()).unwrap().chosen_by,
            ChosenBy::GroupDefault { group: "eng".into() }
        );
        let none = resolve(&ana(), None, &Defaults::default(), &catalog()).unwrap_err();
        assert_eq!(none, RouteError::NoModel { skipped: vec![] });
    }
}
