//! Roles and the decision rule. A role is a set of rules on name prefixes;
//! each rule allows and/or denies verbs. [`decide`] is the one
//! implementation of "may this principal do this verb on this name".
//!
//! The rule: among the rules whose prefix starts the name and that mention
//! the verb, the longest prefix wins; at equal length a deny beats an allow;
//! no such rule → denied. A rule *mentions* a verb directly or by
//! implication: allowing `v` allows every verb `v` implies (`lock` allows
//! `observe`), and denying `v` denies every verb that implies `v` (denying
//! `observe` denies `lock`, `force` and `admin` too, since none of them is
//! possible without observing; denying `force` leaves `observe` alone). So the
//! allowed verbs on a name are always closed under implication.

use super::Verb;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What one rule says about its prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// Verbs granted (with what they imply).
    pub allow: BTreeSet<Verb>,
    /// Verbs refused (with every verb that implies them).
    pub deny: BTreeSet<Verb>,
}

impl Rule {
    /// Whether this rule allows `verb` directly or by implication.
    pub fn allows(&self, verb: Verb) -> bool {
        self.allow.iter().any(|granted| granted.implies(verb))
    }

    /// Whether this rule denies `verb` directly or by implication.
    pub fn denies(&self, verb: Verb) -> bool {
        self.deny.iter().any(|refused| verb.implies(*refused))
    }

    /// Whether the rule says nothing (and can be dropped).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

/// A named set of rules, keyed by prefix (one rule per prefix).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// Prefix → rule.
    pub rules: BTreeMap<String, Rule>,
}

/// The answer of [`decide`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// A rule allows the verb on the longest matching prefix.
    Allowed {
        /// The winning rule's prefix.
        prefix: String,
    },
    /// A rule denies the verb on the longest matching prefix.
    DeniedBy {
        /// The winning rule's prefix.
        prefix: String,
    },
    /// No rule mentions the verb on any prefix of the name.
    NoRule,
}

impl Decision {
    /// Whether the verb is allowed.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed { .. })
    }
}

/// Decides `verb` on `name` from `rules` (the rules of every role the
/// principal holds, as (prefix, rule) pairs): see the module doc.
pub fn decide<'a, I>(rules: I, verb: Verb, name: &str) -> Decision
where
    I: IntoIterator<Item = (&'a str, &'a Rule)>,
{
    // (prefix length, denied) of the best candidate so far.
    let mut best: Option<(usize, bool, &str)> = None;
    for (prefix, rule) in rules {
        if !name.starts_with(prefix) {
            continue;
        }
        let (allows, denies) = (rule.allows(verb), rule.denies(verb));
        if !allows && !denies {
            continue;
        }
        let better = match best {
            None => true,
            Some((len, denied, _)) => {
                prefix.len() > len || (prefix.len() == len && denies && !denied)
            }
        };
        if better {
            best = Some((prefix.len(), denies, prefix));
        }
    }
    match best {
        None => Decision::NoRule,
        Some((_, true, prefix)) => Decision::DeniedBy {
            prefix: prefix.to_owned(),
        },
        Some((_, false, prefix)) => Decision::Allowed {
            prefix: prefix.to_owned(),
        },
    }
}
